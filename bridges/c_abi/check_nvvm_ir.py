#!/usr/bin/env python3
"""Checks fp4fuse bitcode for what libNVVM would refuse, and its exports against the C ABI.

    check_nvvm_ir.py [--llvm-dis llvm-dis-19 | --clang clang-19] [--header fp4fuse_c.h] FILE.bc [FILE.bc ...]

For each file (read with llvm-dis), fails with a list when:
  - it calls or declares an `llvm.*` intrinsic outside nvvm_intrinsics.txt;
  - the `nvvm-reflect-ftz` module flag is still there, or a function definition has `align N`;
  - it defines a function that is not internal and not `fp4fuse_*`, or (with --header) the set of
    exported `fp4fuse_*` functions differs from the prototypes of fp4fuse_c.h.
Exit 0 and one line per file when clean.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def allowed_list(path=os.path.join(HERE, "nvvm_intrinsics.txt")):
    exact, prefixes = set(), []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.endswith(".*"):
                prefixes.append(line[:-1])
            else:
                exact.add(line)
    return exact, prefixes


def is_allowed(name, exact, prefixes):
    if any(name.startswith(p) for p in prefixes):
        return True
    # strip overload suffixes one at a time: llvm.memcpy.p0.p0.i64 -> llvm.memcpy.p0.p0 -> ...
    parts = name.split(".")
    for n in range(len(parts), 1, -1):
        if ".".join(parts[:n]) in exact:
            return True
    return False


def check_text(text, header_symbols=None):
    problems = []
    exact, prefixes = allowed_list()
    intrinsics = set(re.findall(r"@(llvm\.[A-Za-z0-9_.]+)\(", text))
    bad = sorted(i for i in intrinsics if not is_allowed(i, exact, prefixes))
    if bad:
        problems.append("intrinsics outside the NVVM IR list: " + ", ".join(bad))
    if "nvvm-reflect-ftz" in text:
        problems.append("the nvvm-reflect-ftz module flag is present")
    aligned = re.findall(r"^define [^\n]*\) [^\n]*\balign [0-9]+", text, re.M)
    if aligned:
        problems.append(f"{len(aligned)} function definitions carry `align N`")
    exported = set()
    for line in re.findall(r"^define [^\n]*", text, re.M):
        name = re.search(r"@([\w.$]+)\(", line).group(1)
        if re.match(r"^define (internal|private) ", line):
            continue
        if not name.startswith("fp4fuse_"):
            problems.append(f"exported non-ABI function {name}")
        exported.add(name)
    if header_symbols is not None:
        missing = sorted(set(header_symbols) - exported)
        extra = sorted(exported - set(header_symbols))
        if missing:
            problems.append("declared in fp4fuse_c.h but not defined: " + ", ".join(missing))
        if extra:
            problems.append("defined but not in fp4fuse_c.h: " + ", ".join(extra))
    return problems, exported, intrinsics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llvm-dis", default=None)
    ap.add_argument("--clang", default=None, help="take llvm-dis from this clang's installation")
    ap.add_argument("--header", default=None)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    if args.llvm_dis is None:
        if args.clang:
            real = os.path.realpath(shutil.which(args.clang) or args.clang)
            cand = os.path.join(os.path.dirname(real), "llvm-dis")
            args.llvm_dis = cand if os.path.exists(cand) else "llvm-dis"
        else:
            args.llvm_dis = "llvm-dis"
    header_symbols = None
    if args.header:
        sys.path.insert(0, HERE)
        import abi_table
        header_symbols = [s[0] for s in abi_table.parse(args.header)]
    status = 0
    for path in args.files:
        r = subprocess.run([args.llvm_dis, path, "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"check_nvvm_ir.py: {path}: llvm-dis failed: {r.stderr.strip()}")
            status = 1
            continue
        problems, exported, intrinsics = check_text(r.stdout, header_symbols)
        if problems:
            status = 1
            for p in problems:
                print(f"check_nvvm_ir.py: {path}: {p}")
        else:
            print(f"check_nvvm_ir.py: {os.path.basename(path)}: {len(exported)} exported functions, "
                  f"{len(intrinsics)} intrinsics, all in the NVVM IR list")
    return status


if __name__ == "__main__":
    sys.exit(main())
