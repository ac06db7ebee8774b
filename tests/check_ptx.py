#!/usr/bin/env python3
"""Reads `nvcc -ptx` output per target and checks which conversion path each target compiled.

usage: check_ptx.py NVCC INCLUDE_DIR PROBE_SOURCE
Prints one line per check and exits 1 if any failed.
"""
import subprocess
import sys
import tempfile

nvcc, include, probe = sys.argv[1:4]

E2M1_ENCODE = "cvt.rn.satfinite.e2m1x2.f32"
E2M1_DECODE = "cvt.rn.f16x2.e2m1x2"
UE8M0_UP = "cvt.rp.satfinite.ue8m0x2.f32"
E4M3_ENCODE = "cvt.rn.satfinite.e4m3x2.f32"

# target -> (substrings that must appear, substrings that must not)
expectations = {
    "100a": ([E2M1_ENCODE, E2M1_DECODE, UE8M0_UP, E4M3_ENCODE], []),
    "100f": ([E2M1_ENCODE, E2M1_DECODE, UE8M0_UP], []),
    "120a": ([E2M1_ENCODE, E2M1_DECODE], []),
    "90a": ([E4M3_ENCODE], ["e2m1", "ue8m0"]),
    "89": ([E4M3_ENCODE], ["e2m1", "ue8m0"]),
    "80": ([], ["e2m1", "ue8m0", "e4m3"]),
}

failures = 0
for target, (must, must_not) in expectations.items():
    cmd = [nvcc, "-std=c++17", "-I", include, "-ptx", "-o", "-", "-gencode",
           f"arch=compute_{target},code=sm_{target}", probe]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL sm_{target}: nvcc failed:\n{result.stderr}")
        failures += 1
        continue
    ptx = result.stdout
    for s in must:
        ok = s in ptx
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} sm_{target}: PTX contains {s} ({ptx.count(s)}x)")
    for s in must_not:
        ok = s not in ptx
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} sm_{target}: PTX contains no '{s}' (software path)")

# The toolkit/language guard: C++14 must be refused with the sentence from config.cuh.
with tempfile.NamedTemporaryFile("w", suffix=".cu") as f:
    f.write("#include <fp4fuse/fp4fuse.cuh>\n")
    f.flush()
    result = subprocess.run([nvcc, "-std=c++14", "-I", include, "-c", "-o", "/dev/null", f.name],
                            capture_output=True, text=True)
    ok = result.returncode != 0 and "fp4fuse needs C++17" in result.stderr
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} -std=c++14 is refused with a clear #error")

print(f"check_ptx: {failures} failure(s)")
sys.exit(1 if failures else 0)
