#!/usr/bin/env python3
"""Compiles the sm_90a engine's kernels with ptxas's report on and fails on a serialized wgmma.

usage: engine_wgmma.py NVCC INCLUDE_DIR SOURCE [NVCC ARGS...]

ptxas reports "Potential Performance Loss: wgmma.mma_async instructions are serialized ..." (C75xx)
as information, not as a warning, and then waits for every wgmma before the next: the kernel stays
correct and runs 1.4-1.7x slower (bench/results/engine6.md, call G). Control flow around the
mainloop (a second copy of it joined while MMAs are in flight, accumulators written between a
wgmma and its wait) is enough to cause it, so every change to the engine is checked here, without a
GPU. Prints each sm90 kernel's verdict and exits 1 on any report or if no sm90 kernel was compiled.
"""
import re
import subprocess
import sys
import tempfile

nvcc, include, source, *extra = sys.argv[1:]
with tempfile.NamedTemporaryFile(suffix=".cubin") as out:
    cmd = [nvcc, "-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-I", include, "-gencode",
           "arch=compute_90a,code=sm_90a", "-Xptxas", "-v", "-cubin", "-o", out.name, source, *extra]
    result = subprocess.run(cmd, capture_output=True, text=True)
if result.returncode != 0:
    print(f"FAIL nvcc failed:\n{result.stderr[-4000:]}")
    sys.exit(1)

report = result.stderr.splitlines()
engine = re.compile(r"fp4fuse4gemm4sm90\d+gemm_(?:pingpong_)?kernel")
kernels = [m.group(1) for line in report if (m := re.search(r"Compiling entry function '([^']+)'", line)) and engine.search(m.group(1))]
losses = [line for line in report if "Potential Performance Loss" in line]
for line in losses:
    print(f"FAIL {line.strip()}")
print(f"{len(kernels)} sm_90a engine kernels compiled, {len(losses)} ptxas performance-loss report(s)")
if not kernels:
    print("FAIL no sm90 engine kernel in the report: the check would pass on nothing")
sys.exit(1 if losses or not kernels else 0)
