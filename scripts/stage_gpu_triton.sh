#!/usr/bin/env bash
# Assembles what scripts/gpu_triton.sh needs into DEST (e.g. a directory carried to a GPU machine):
# the Python package (bridges/python/fp4fuse), the bitcode from BUILD/bridges/c_abi, the C++
# reference library (built here with nvcc for sm_90a unless REF_SO names a built one), the tests
# and the example.   usage: scripts/stage_gpu_triton.sh BUILD DEST
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 dest=$2
mkdir -p "$dest/bc" "$dest/tests/bridges/triton" "$dest/bridges/python/examples"
rm -rf "$dest/bridges/python/fp4fuse"
cp -rL bridges/python/fp4fuse "$dest/bridges/python/fp4fuse"
find "$dest/bridges" -name __pycache__ -prune -exec rm -rf {} +
cp "$build"/bridges/c_abi/fp4fuse_*.bc "$dest/bc/"
cp tests/bridges/triton/gpu_test.py tests/bridges/triton/kernels.py tests/bridges/triton/reference.cu "$dest/tests/bridges/triton/"
cp bridges/python/examples/moe_l1_triton.py bridges/python/examples/moe_l1_kernel.py "$dest/bridges/python/examples/"
cp scripts/gpu_triton.sh "$dest/"
if [ -n "${REF_SO:-}" ]; then
  cp "$REF_SO" "$dest/libfp4fuse_triton_ref.so"
else
  nice -n 10 nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -I include \
    tests/bridges/triton/reference.cu -o "$dest/libfp4fuse_triton_ref.so"
fi
du -sh "$dest"
