#!/usr/bin/env python3
"""Misuse that must not compile, and the sentence it must fail with: each case in
tests/static_errors/cases.cu is compiled alone (-DCASE=N, nvcc -c for sm_90a); the compile must
fail and its output must contain the case's expected static_assert text.

usage: static_errors.py NVCC INCLUDE_DIR CASES_SOURCE [further nvcc arguments, e.g. -isystem DIR]
"""
import re
import subprocess
import sys
import tempfile

nvcc, include, source = sys.argv[1:4]
extra = sys.argv[4:]
text = open(source).read()
# Cases: `#if CASE == N  // expect: <text>`
cases = re.findall(r"#(?:el)?if CASE == (\d+)\s*//\s*expect:\s*(.+)", text)
if not cases:
    sys.exit("no cases found")
numbers = [n for n, _ in cases]
repeated = sorted({n for n in numbers if numbers.count(n) > 1}, key=int)
if repeated:
    sys.exit(f"static_errors.py: case numbers {', '.join(repeated)} appear more than once in {source}: "
             "each case needs its own number (only the first of a repeated number would be compiled)")
failures = 0
for number, expected in cases:
    expected = expected.strip()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-std=c++17", "-I", include, "-c", "-o", f"{tmp}/case.o", "-gencode", "arch=compute_90a,code=sm_90a",
               f"-DCASE={number}"] + extra + [source]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode == 0:
        print(f"FAIL case {number}: compiled, but must fail with: {expected}")
        failures += 1
    elif expected not in proc.stdout:
        print(f"FAIL case {number}: failed without the expected sentence '{expected}':\n{proc.stdout}")
        failures += 1
    else:
        print(f"ok   case {number}: {expected}")
# The file without a case compiles: the cases fail for their own reason only.
with tempfile.TemporaryDirectory() as tmp:
    proc = subprocess.run([nvcc, "-std=c++17", "-I", include, "-c", "-o", f"{tmp}/none.o", "-gencode", "arch=compute_90a,code=sm_90a",
                           "-DCASE=0"] + extra + [source], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print(f"FAIL: the file without a case does not compile:\n{proc.stdout}")
        failures += 1
    else:
        print("ok   CASE=0 compiles")
sys.exit(1 if failures else 0)
