#!/usr/bin/env python3
"""Builds examples/l1_gemm.cu for sm_90a and sm_100a and reads the PTX of each.

sm_90a: the TMA + wgmma engine (cp.async.bulk.tensor, wgmma.mma_async, setmaxnreg) and no E2M1 cvt.
sm_100a: the portable mma.sync engine with the fused epilogue's hardware E2M1 conversion
(cvt.rn.satfinite.e2m1x2.f32); the wgmma kernel there is only a trap. Both also build to SASS.

usage: l1_gemm_ptx.py NVCC INCLUDE_DIR EXAMPLE_SOURCE
"""
import subprocess
import sys

nvcc, include, source = sys.argv[1:4]
expectations = {
    "90a": (["wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
             "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "cp.async.bulk.tensor.2d",
             "multicast::cluster", "mapa.shared::cluster",
             "setmaxnreg.inc.sync.aligned.u32", "mbarrier.try_wait.parity", "mma.sync.aligned.m16n8k16"],
            ["cvt.rn.satfinite.e2m1x2.f32"]),
    "100a": (["cvt.rn.satfinite.e2m1x2.f32", "mma.sync.aligned.m16n8k16", "trap"], ["wgmma.mma_async"]),
}
failures = 0
for target, (must, must_not) in expectations.items():
    gencode = ["-gencode", f"arch=compute_{target},code=sm_{target}"]
    base = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-I", include] + gencode
    ptx = subprocess.run(base + ["-ptx", "-o", "-", source], capture_output=True, text=True)
    sass = subprocess.run(base + ["-c", "-o", "/dev/null", source], capture_output=True, text=True)
    for name, r in (("ptx", ptx), ("sass", sass)):
        if r.returncode != 0:
            print(f"FAIL sm_{target}: nvcc ({name}) failed:\n{r.stderr}")
            failures += 1
    if ptx.returncode != 0:
        continue
    for s in must:
        ok = s in ptx.stdout
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} sm_{target}: contains {s}")
    for s in must_not:
        ok = s not in ptx.stdout
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} sm_{target}: lacks {s}")
sys.exit(1 if failures else 0)
