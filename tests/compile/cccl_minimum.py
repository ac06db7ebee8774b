#!/usr/bin/env python3
"""fp4fuse against the oldest CCCL it supports, and its sentence for an older one.

CCCL 2.8 (CUDA 12.9's) must compile every public header but the CUTLASS node's, the GEMM engine
included, and the layouts' size arithmetic (tests/compile/cccl_minimum.cu, for sm_90a and sm_80);
CCCL 2.7 (CUDA 12.8's) must fail with config.cuh's sentence. The CCCL headers come first on the
include path, ahead of the toolkit's own. Where they come from: FP4FUSE_CCCL_2_8_INCLUDE /
FP4FUSE_CCCL_2_7_INCLUDE (an include directory), else the NVIDIA wheels on PyPI
(nvidia-cuda-cccl-cu12 12.9.27 and 12.8.90, 3 MB each), unpacked under the build directory. A
half whose headers are not available is skipped (says so); without both (no network) the test
reports SKIP (exit 77).

usage: cccl_minimum.py NVCC INCLUDE_DIR SOURCE WORK_DIR
"""
import os
import subprocess
import sys
import zipfile

nvcc, include, source, work = sys.argv[1:5]
WHEELS = {(2, 8): "12.9.27", (2, 7): "12.8.90"}


def cccl_include(version):
    env = os.environ.get("FP4FUSE_CCCL_%d_%d_INCLUDE" % version)
    if env:
        return env
    wheel_version = WHEELS[version]
    root = os.path.join(work, "cccl-" + wheel_version)
    inc = os.path.join(root, "nvidia", "cuda_cccl", "include")
    if os.path.isdir(inc):
        return inc
    os.makedirs(root, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
                           "--dest", root, "nvidia-cuda-cccl-cu12==" + wheel_version],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wheels = [f for f in os.listdir(root) if f.endswith(".whl")]
    if proc.returncode != 0 or not wheels:
        print(proc.stdout)
        print("CCCL %d.%d's headers are not available here (no FP4FUSE_CCCL_%d_%d_INCLUDE, and pip could not fetch "
              "nvidia-cuda-cccl-cu12==%s)" % (version + version + (wheel_version,)))
        return None
    with zipfile.ZipFile(os.path.join(root, wheels[0])) as z:
        z.extractall(root)
    return inc


def compile_with(cccl, version, targets):
    cmd = [nvcc, "-std=c++17", "-I", cccl, "-I", include, "-c", "-o", "/dev/null", "-Wno-deprecated-gpu-targets",
           "-DEXPECT_CCCL_MAJOR=%d" % version[0], "-DEXPECT_CCCL_MINOR=%d" % version[1]]
    for t in targets:
        cmd += ["-gencode", t]
    proc = subprocess.run(cmd + [source], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("$ " + " ".join(cmd + [source]))
    return proc.returncode, proc.stdout


# Both header sets first: a missing one is a SKIP of its half, never a masked failure of the other.
minimum, older = cccl_include((2, 8)), cccl_include((2, 7))
if minimum is None and older is None:
    print("SKIP: neither CCCL 2.8's nor 2.7's headers are available here")
    sys.exit(77)
failed = False
if minimum is None:
    print("skip CCCL 2.8 (CUDA 12.9's): headers not available")
else:
    status, out = compile_with(minimum, (2, 8), ["arch=compute_90a,code=sm_90a", "arch=compute_80,code=sm_80"])
    print(out, end="")
    print(("ok  " if status == 0 else "FAIL") + " CCCL 2.8 (CUDA 12.9's): every public header and the layouts' arithmetic compile")
    failed |= status != 0
if older is None:
    print("skip CCCL 2.7 (CUDA 12.8's): headers not available")
else:
    status, out = compile_with(older, (2, 7), ["arch=compute_90a,code=sm_90a"])
    sentence = "fp4fuse needs CCCL 2.8 or newer"
    refused = status != 0 and sentence in out
    if not refused:
        print(out, end="")
    print(("ok  " if refused else "FAIL") + " CCCL 2.7 (CUDA 12.8's): refused with config.cuh's sentence")
    failed |= not refused
sys.exit(1 if failed else 0)
