#!/usr/bin/env python3
"""Build settings fp4fuse refuses, each with a sentence.

A target older than sm_80 (plain `nvcc` without -gencode: sm_75 in CUDA 13) fails to compile with
config.cuh's sentence naming the supported targets.

fp4fuse under --use_fast_math: nvcc defines no macro for it, so the library asks NVVM
(__nvvm_reflect) and a device pass built that way prints a sentence and traps. Compiles
tests/compile/build_flags.cu to PTX for sm_90a with and without the flag (and with -ftz=true and
-prec-div=false alone): the fast builds must contain the trap and the sentence, the IEEE build
neither.

usage: build_flags.py NVCC INCLUDE_DIR SOURCE
"""
import subprocess
import sys
import tempfile

nvcc, include, source = sys.argv[1:4]
sentence = "fp4fuse: this device code was compiled with --use_fast_math"
failed = False
with tempfile.TemporaryDirectory() as tmp:
    for flags, refused in ([], False), (["--use_fast_math"], True), (["-ftz=true"], True), (["-prec-div=false"], True):
        cmd = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-I", include, "-ptx", "-o", f"{tmp}/k.ptx",
               "-gencode", "arch=compute_90a,code=sm_90a"] + flags + [source]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            print(f"FAIL {' '.join(flags) or 'IEEE'}: does not compile:\n{proc.stdout}")
            failed = True
            continue
        ptx = open(f"{tmp}/k.ptx").read()
        has_trap = "trap;" in ptx
        # printf's format string is a global byte array: look for its first bytes.
        has_sentence = ",".join(str(ord(c)) for c in "fp4fuse: this") in ptx.replace(" ", "")
        ok = (has_trap and has_sentence) if refused else not (has_trap or has_sentence)
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(flags) or 'IEEE build'}: trap {'present' if has_trap else 'absent'}, "
              f"sentence {'present' if has_sentence else 'absent'} (want {'both' if refused else 'neither'})")
        failed |= not ok
    cmd = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-I", include, "-c", "-o", f"{tmp}/k.o", "-Wno-deprecated-gpu-targets",
           "-gencode", "arch=compute_75,code=sm_75", source]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    want = "fp4fuse: device code needs sm_80 or newer"
    ok = proc.returncode != 0 and want in proc.stdout
    print(f"{'ok  ' if ok else 'FAIL'} sm_75: {'refused with' if ok else 'not refused with'} '{want}'")
    if not ok:
        print(proc.stdout[-3000:])
    failed |= not ok
sys.exit(1 if failed else 0)
