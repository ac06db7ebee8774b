#!/usr/bin/env bash
# Sourced by the other scripts: makes sure nvcc, python3, Meson >= 1.1, Ninja, Catch2 and (for the
# consumers suite) CMake and Doxygen exist, installing what is missing (Debian packages and PyPI;
# needs root or sudo for apt-get).
set -euo pipefail

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin /usr/local/cuda-12.9/bin /usr/local/cuda-12.8/bin; do
    if [ -x "$d/nvcc" ]; then export PATH="$d:$PATH"; break; fi
  done
fi
command -v nvcc >/dev/null 2>&1 || { echo "fp4fuse: nvcc not found; install the CUDA Toolkit 12.9+ (or 12.8 with CCCL 2.8+) first" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
apt_updated=0
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "fp4fuse: please install: $*" >&2; exit 1
  fi
  if [ "$apt_updated" = 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip
command -v pkg-config >/dev/null 2>&1 || apt_install pkg-config
command -v ninja >/dev/null 2>&1 || apt_install ninja-build

meson_ok() {
  command -v meson >/dev/null 2>&1 &&
    python3 -c "import sys; v=tuple(int(p) for p in sys.argv[1].split('.')[:2]); sys.exit(0 if v >= (1, 1) else 1)" "$(meson --version)"
}
if ! meson_ok; then
  python3 -m pip install -q --disable-pip-version-check "meson==1.12.1" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages "meson==1.12.1"
  hash -r
  if ! meson_ok; then
    # pip's scripts directory may not be on PATH (pyenv without a rehash, --user installs).
    PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$HOME/.local/bin:$PATH"
    export PATH
    hash -r
  fi
fi
meson_ok || { echo "fp4fuse: could not install Meson >= 1.1" >&2; exit 1; }

if [ "${FP4FUSE_NEED_CATCH2:-0}" = 1 ] && ! pkg-config --exists catch2; then
  apt_install catch2
fi

# The 'consumers' test suite builds a CMake consumer and the Doxygen API reference.
if [ "${FP4FUSE_NEED_CONSUMER_TOOLS:-0}" = 1 ]; then
  command -v cmake >/dev/null 2>&1 || apt_install cmake
  command -v doxygen >/dev/null 2>&1 || apt_install doxygen
fi

# The 'bridges' test suite: clang 19 with its LLVM tools (the bitcode of the C ABI) and the CuTe DSL
# (compiles kernels for sm_90a/sm_100a without a GPU). Debian bookworm has clang-19 (1:19.1.7).
if [ "${FP4FUSE_NEED_BRIDGE_TOOLS:-0}" = 1 ]; then
  if ! command -v clang-19 >/dev/null 2>&1; then
    apt_install --no-install-recommends clang-19 llvm-19 || echo "fp4fuse: could not install clang-19; the bitcode tests will SKIP" >&2
  fi
  if ! python3 -c "import cutlass.cute" >/dev/null 2>&1; then
    python3 -m pip install -q --disable-pip-version-check "nvidia-cutlass-dsl==4.8.1" 2>/dev/null ||
      python3 -m pip install -q --disable-pip-version-check --break-system-packages "nvidia-cutlass-dsl==4.8.1" ||
      echo "fp4fuse: could not install nvidia-cutlass-dsl; the CuTe DSL tests will SKIP" >&2
  fi
fi

# The 'triton' test suite compiles Triton kernels ahead of time (no GPU needed): Triton from PyPI,
# the version fp4fuse.triton_ext is tested with.
if [ "${FP4FUSE_NEED_TRITON:-0}" = 1 ] && ! python3 -c "import triton" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check "triton==3.6.0" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages "triton==3.6.0" ||
    echo "fp4fuse: could not install triton==3.6.0; the triton suite will report SKIP" >&2
fi

# The optional CUTLASS adapter (include/fp4fuse/cutlass/) is built and tested against the C++
# headers of the pinned `nvidia-cutlass` wheel (no git checkout; the core never needs them).
if [ "${FP4FUSE_NEED_CUTLASS:-0}" = 1 ] && ! python3 -c "import cutlass_library" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check --no-deps "nvidia-cutlass==4.2.0.0" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --no-deps --break-system-packages "nvidia-cutlass==4.2.0.0" ||
    echo "fp4fuse: could not install nvidia-cutlass 4.2.0.0; the CUTLASS adapter's tests are skipped" >&2
fi
