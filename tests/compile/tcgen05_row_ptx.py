#!/usr/bin/env python3
"""Builds tests/compile/tcgen05_row.cu for sm_100a (PTX and SASS) and reads its PTX: the tcgen05.ld
32x32b loads (x32 for NVFP4, x64 for MXFP4) feed the row epilogue, which encodes with the hardware
E2M1 cvt (8 per NVFP4 block of 16, 16 per MXFP4 block of 32) and combines the amax with one
redux + atomic per warp. Compiled only: no Blackwell GPU runs it.

usage: tcgen05_row_ptx.py NVCC INCLUDE_DIR SOURCE
"""
import subprocess
import sys

nvcc, include, source = sys.argv[1:4]
base = [nvcc, "-std=c++17", "-I", include, "-gencode", "arch=compute_100a,code=sm_100a"]
ptx = subprocess.run(base + ["-ptx", "-o", "-", source], capture_output=True, text=True)
sass = subprocess.run(base + ["-c", "-o", "/dev/null", source], capture_output=True, text=True)
failures = 0
for name, r in (("ptx", ptx), ("sass", sass)):
    if r.returncode != 0:
        print(f"FAIL sm_100a: nvcc ({name}) failed:\n{r.stderr}")
        failures += 1
if ptx.returncode == 0:
    text = ptx.stdout
    checks = [
        ("tcgen05.ld.sync.aligned.32x32b.x32.b32", 1),
        ("tcgen05.ld.sync.aligned.32x32b.x64.b32", 1),
        ("cvt.rn.satfinite.e2m1x2.f32", 8 + 16),
        ("redux.sync.max.u32", 2),
        ("atom.global.max.u32", 2),
    ]
    for s, at_least in checks:
        n = text.count(s)
        ok = n >= at_least
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} sm_100a: {s} x{n} (at least {at_least})")
    ok = "shfl.sync" not in text
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} sm_100a: no shfl.sync (a block per thread exchanges nothing)")
sys.exit(1 if failures else 0)
