#!/usr/bin/env python3
"""Compiles the sm_90a engine's kernels with ptxas's report on and fails on a serialized wgmma.

usage: engine_wgmma.py NVCC INCLUDE_DIR SOURCE

ptxas reports "Potential Performance Loss: wgmma.mma_async instructions are serialized ..." (C75xx)
as information, not as a warning, and then waits for every wgmma before the next: the kernel stays
correct and runs 1.4-1.7x slower (bench/results/engine6.md, call G). Control flow around the
mainloop (a second copy of it joined while MMAs are in flight, accumulators written between a
wgmma and its wait) is enough to cause it, so every change to the engine is checked here, without a
GPU. The flags are the release build's (-O3 -DNDEBUG), whose code the benchmarks time. Prints the
count of each kernel kind and every report; exits 1 on any report, or if a kernel kind (the
cooperative gemm_kernel, the ping-pong gemm_pingpong_kernel, their staged-store forms
gemm_staged_kernel and gemm_pingpong_staged_kernel, the experimental swap-AB kernel
gemm_swap_ab_kernel) is missing from the compile.
"""
import re
import subprocess
import sys

nvcc, include, source = sys.argv[1:4]
cmd = [nvcc, "-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-I", include, "-gencode",
       "arch=compute_90a,code=sm_90a", "-Xptxas", "-v", "-cubin", "-o", "/dev/null", source]
result = subprocess.run(cmd, capture_output=True, text=True)
if result.returncode != 0:
    print(f"FAIL nvcc failed:\n{result.stderr[-4000:]}")
    sys.exit(1)

# Mangled names: fp4fuse::gemm::sm90::gemm_kernel (4sm90 11gemm_kernel), gemm_pingpong_kernel (20...),
# the dense kernels with a BF16 store staged through TMA: gemm_staged_kernel (18...) and
# gemm_pingpong_staged_kernel (27...), and the swap-AB kernel (19...).
kinds = {"gemm_kernel": re.compile(r"4sm9011gemm_kernelI"), "gemm_pingpong_kernel": re.compile(r"4sm9020gemm_pingpong_kernelI"),
         "gemm_staged_kernel": re.compile(r"4sm9018gemm_staged_kernelI"),
         "gemm_pingpong_staged_kernel": re.compile(r"4sm9027gemm_pingpong_staged_kernelI"),
         "gemm_swap_ab_kernel": re.compile(r"4sm9019gemm_swap_ab_kernelI")}
counts = {kind: 0 for kind in kinds}
losses = []
for line in result.stderr.splitlines():
    entry = re.search(r"Compiling entry function '([^']+)'", line)
    if entry:
        for kind, pattern in kinds.items():
            counts[kind] += bool(pattern.search(entry.group(1)))
    if "Potential Performance Loss" in line or re.search(r"\(C75\d\d\)", line):
        losses.append(line.strip())
for line in losses:
    print(f"FAIL {line}")
print(", ".join(f"{n} {kind}" for kind, n in counts.items()) + f" compiled for sm_90a, {len(losses)} ptxas performance-loss report(s)")
missing = [kind for kind, n in counts.items() if n == 0]
for kind in missing:
    print(f"FAIL no {kind} in ptxas's report: the check would pass without it")
sys.exit(1 if losses or missing else 0)
