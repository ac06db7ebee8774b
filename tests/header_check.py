#!/usr/bin/env python3
"""Compiles one generated header check (tests/header_check.cu.in: the header included twice) the
way a strict consumer does: host flags -Wall -Wextra -Werror and nvcc's -Werror all-warnings, for
every -gencode target given.

usage: header_check.py NVCC INCLUDE_DIR SOURCE [nvcc arguments: -gencode pairs, ...]

On failure it compiles again with the warnings not treated as errors, to tell a header that does
not compile from one that only warns, and lists every warning as `file:line: text`.
"""
import re
import subprocess
import sys

STRICT = ["-Xcompiler=-Wall,-Wextra,-Werror", "-Werror", "all-warnings"]
LENIENT = ["-Xcompiler=-Wall,-Wextra"]

nvcc, include, source = sys.argv[1:4]
extra = sys.argv[4:]
base = [nvcc, "-std=c++17", "-I", include, "-c", "-o", "/dev/null"] + extra


def run(flags):
    cmd = base + flags + [source]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return cmd, proc.returncode, proc.stdout


cmd, status, out = run(STRICT)
print("$ " + " ".join(cmd))
if status == 0:
    print(out, end="")
    print("ok: compiles warning-free under " + " ".join(STRICT))
    sys.exit(0)

cmd2, status2, out2 = run(LENIENT)
if status2 != 0:
    print(out2, end="")
    print("FAIL: the header does not compile (even without -Werror):")
    print("$ " + " ".join(cmd2))
    sys.exit(1)

# It compiles: list each warning once (file:line: text), host compiler and nvcc front end alike.
warnings = []
for line in out2.split("\n"):
    m = (re.match(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)?\s*warning:\s*(?P<text>.*)$", line) or
         re.match(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\):\s*warning\s*(?:#\S+)?:?\s*(?P<text>.*)$", line))
    if m:
        w = f"{m.group('file')}:{m.group('line')}: warning: {m.group('text').strip()}"
        if w not in warnings:
            warnings.append(w)
print(out2, end="")
print(f"FAIL: compiles, but not warning-free: {len(warnings) or 'some'} warning(s) under "
      + " ".join(STRICT) + ":")
for w in warnings:
    print("  " + w)
sys.exit(1)
