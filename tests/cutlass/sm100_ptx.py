#!/usr/bin/env python3
"""Builds tests/cutlass/sm100_swiglu_quantize.cu (the fp4fuse node in CUTLASS's sm100 ptr-array grouped
GEMM: NVFP4 1-SM, MXFP4 1-SM, NVFP4 2-SM) for sm_100a, through ptxas, keeping its PTX, and checks:
the three kernels are there; the accumulators come from tensor memory by tcgen05.ld 32x32b; the
row form encodes with the hardware E2M1 cvt; the output amax is one redux + atomic per warp; the
kernels store no D (no TMA store from shared memory: D = void); ptxas reports no spills for any of
them and no stack frame for the NVFP4 ones (the MXFP4 one: a known 64-byte frame, see below).
Compiled only: no Blackwell GPU runs it.

usage: sm100_ptx.py NVCC INCLUDE_DIR SOURCE [nvcc arguments: -isystem <CUTLASS>/include, ...]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

nvcc, include, source = sys.argv[1:4]
extra = sys.argv[4:]
failures = 0


def check(ok, what):
    global failures
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} sm_100a: {what}")


with tempfile.TemporaryDirectory() as keep:
    cmd = [nvcc, "-std=c++17", "-I", include, "--expt-relaxed-constexpr", "-DNDEBUG", "-gencode", "arch=compute_100a,code=sm_100a",
           "-c", "-o", os.path.join(keep, "sm100.o"), "--keep", "--keep-dir", keep, "-Xptxas", "-v"] + extra + [source]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("$ " + " ".join(cmd))
        print(f"FAIL sm_100a: nvcc failed:\n{r.stderr[-20000:]}")
        sys.exit(1)
    ptx_files = glob.glob(os.path.join(keep, "*.ptx"))
    check(len(ptx_files) == 1, f"one PTX file kept ({len(ptx_files)})")
    text = open(ptx_files[0]).read() if ptx_files else ""
    log = r.stderr

entries = re.findall(r"^\.visible \.entry (\S+)\(", text, re.M) + re.findall(r"^\.entry (\S+)\(", text, re.M)
kernels = [e for e in entries if "device_kernel" in e]
check(len(kernels) == 3, f"{len(kernels)} CUTLASS kernels (3: NVFP4 1-SM, MXFP4 1-SM, NVFP4 2-SM)")
for s, at_least, why in (
    ("tcgen05.ld.sync.aligned.32x32b", 3, "the accumulators from tensor memory, 32x32b (a row per thread)"),
    ("cvt.rn.satfinite.e2m1x2.f32", 3 * 8, "the hardware E2M1 encode"),
    ("tcgen05.mma", 3, "the UMMA mainloop"),
    ("redux.sync.max.u32", 3, "the output amax: one warp max"),
    ("atom.global.max.u32", 3, "the output amax: one atomic per warp"),
):
    n = text.count(s)
    check(n >= at_least, f"{s} x{n} (at least {at_least}): {why}")
tma_stores = len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", text))
check(tma_stores == 0, f"no TMA store (D = void), found {tma_stores}")
# Local memory per kernel: none in the NVFP4 kernels. The MXFP4 kernel keeps its tile's output
# descriptor (the node's `out`, copied into each of the four bias x amax variants of the
# description) in a 64-byte local frame, read once per subtile, not per element (nvcc 13.0): a
# known, bounded cost, checked so that it cannot grow unnoticed.
bodies = re.split(r"^(?:\.visible )?\.entry ", text, flags=re.M)[1:]
for body in bodies:
    name = body.split("(", 1)[0]
    if "device_kernel" not in name:
        continue
    depot = re.search(r"__local_depot\d+\[(\d+)\]", body)
    depot_bytes = int(depot.group(1)) if depot else 0
    if "mxfp4" in name:
        check(depot_bytes <= 64, f"MXFP4 kernel: local frame {depot_bytes} bytes in the PTX (known: the tile's output descriptor; at most 64)")
    else:
        check(depot_bytes == 0 and "st.local" not in body, f"NVFP4 kernel: no local memory in the PTX ({depot_bytes} bytes)")
# ptxas -v: one "Compiling entry function" block per kernel, then its stack frame and spills.
usage = re.findall(r"Compiling entry function '(\S+)' for 'sm_100a'\s*\n(?:.*\n)*?.*?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                   log)
usage = [u for u in usage if "device_kernel" in u[0]]
check(len(usage) == 3, f"ptxas resource usage of the 3 kernels ({len(usage)})")
for name, frame, stores, loads in usage:
    kind = "MXFP4" if "mxfp4" in name else "NVFP4"
    frame_ok = int(frame) <= 64 if kind == "MXFP4" else frame == "0"
    check(frame_ok and stores == "0" and loads == "0",
          f"{kind} kernel: {frame} bytes stack frame (NVFP4: 0, MXFP4: at most 64), {stores} spill stores, {loads} spill loads")
regs = re.findall(r"Used (\d+) registers", log)
print(f"info sm_100a: registers per kernel (ptxas): {', '.join(regs)}")
sys.exit(1 if failures else 0)
