#!/usr/bin/env python3
"""The C ABI as data, read from fp4fuse_c.h (the one list of symbols).

    abi_table.py --python OUT.py   writes the table module of the Python package (fp4fuse/_abi.py)
    abi_table.py --check OUT.py    exits 1 when OUT.py differs from what the header gives
    abi_table.py --markdown        prints the ABI table for docs/CUTE_DSL.md

Each prototype `FP4FUSE_C_API <ret> <name>(<type> <arg>, ...);` becomes
(name, ret, ((type, arg), ...)) with the types spelled as in C: float, uint32_t, int64_t,
const float*, uint32_t*, uint8_t*, float*, void.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "fp4fuse_c.h")

PROTO = re.compile(r"^FP4FUSE_C_API\s+(\w+)\s+(fp4fuse_\w+)\((.*)\);", re.M)


def parse(header=HEADER):
    with open(header) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    table = []
    for ret, name, args in PROTO.findall(text):
        params = []
        for a in args.split(","):
            a = a.strip()
            m = re.match(r"^(const\s+)?(\w+)\s*(\*?)\s*(\w+)$", a)
            if not m:
                sys.exit(f"abi_table.py: cannot read the parameter `{a}` of {name}")
            ctype = (m.group(1) or "") + m.group(2) + m.group(3)
            params.append((ctype, m.group(4)))
        table.append((name, ret, tuple(params)))
    names = [t[0] for t in table]
    if len(set(names)) != len(names):
        sys.exit("abi_table.py: a symbol is declared twice in fp4fuse_c.h")
    return table


def python_module(table):
    lines = ['"""The C ABI of the fp4fuse bitcode: (symbol, return type, ((C type, name), ...)).',
             "",
             "Generated from bridges/c_abi/fp4fuse_c.h by bridges/c_abi/abi_table.py --python; do not edit.",
             '"""', "", "SYMBOLS = ("]
    for name, ret, params in table:
        lines.append(f"    ({name!r}, {ret!r}, {params!r}),")
    lines += [")", ""]
    return "\n".join(lines)


def markdown(table):
    rows = ["| symbol | returns | parameters |", "|---|---|---|"]
    for name, ret, params in table:
        rows.append(f"| `{name}` | `{ret}` | " + ", ".join(f"`{t} {n}`" for t, n in params) + " |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--python")
    g.add_argument("--check")
    g.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    table = parse()
    if args.python:
        with open(args.python, "w") as f:
            f.write(python_module(table))
    elif args.check:
        with open(args.check) as f:
            if f.read() != python_module(table):
                print(f"abi_table.py: {args.check} is out of date with fp4fuse_c.h; run abi_table.py --python {args.check}")
                return 1
        print(f"abi_table.py: {args.check} matches fp4fuse_c.h ({len(table)} symbols)")
    else:
        print(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
