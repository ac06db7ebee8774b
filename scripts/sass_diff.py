#!/usr/bin/env python3
"""Compares the SASS of two builds kernel by kernel: is a device change bit-neutral without a GPU?

    scripts/sass_diff.py OLD_DIR NEW_DIR      # every executable test_* / bench_* in NEW_DIR
    scripts/sass_diff.py OLD_BINARY NEW_BINARY

For each binary: how many kernels are identical to the letter (registers included), how many
differ, and which exist on one side only. Anonymous-namespace names (which carry a hash of the
source path) are normalised, so builds of two checkouts compare. A kernel whose SASS is identical
computes the same bits as the one that ran. cuobjdump comes from $CUOBJDUMP, else PATH.
"""
import os
import re
import shutil
import subprocess
import sys

CUOBJDUMP = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"


def normalise(name):
    """`45_GLOBAL__N__<hash>_7_e2m1_cu_<hash>_22902` (a length-prefixed identifier) -> `4ANON`."""
    out, i = "", 0
    while True:
        j = name.find("_GLOBAL__N__", i)
        if j < 0:
            return out + name[i:]
        k = j
        while k > i and name[k - 1].isdigit():
            k -= 1
        out += name[i:k] + "4ANON"
        i = j + int(name[k:j])


def kernels(path):
    text = subprocess.run([CUOBJDUMP, "-sass", path], capture_output=True, text=True, check=True).stdout
    result, name, body = {}, None, []
    for line in text.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            if name:
                result[name] = body
            name, body = normalise(m.group(1)), []
        elif name and re.match(r"\s+/\*[0-9a-f]{4,}\*/", line):
            body.append(re.sub(r"/\*[0-9a-f]+\*/", "", line).split(";")[0].strip())
    if name:
        result[name] = body
    return result


def compare(old, new, label):
    a, b = kernels(old), kernels(new)
    common = sorted(set(a) & set(b))
    differ = [k for k in common if a[k] != b[k]]
    print(f"{label}: {len(a)} -> {len(b)} kernels, {len(common) - len(differ)} identical, {len(differ)} differ, "
          f"{len(set(a) - set(b))} only old, {len(set(b) - set(a))} only new")
    for k in differ:
        print(f"  differs: {k[:140]} ({len(a[k])} -> {len(b[k])} instructions)")
    return not differ


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, new = sys.argv[1:]
    if os.path.isfile(new):
        sys.exit(0 if compare(old, new, os.path.basename(new)) else 1)
    same = True
    for name in sorted(os.listdir(new)):
        path = os.path.join(new, name)
        if not (re.match(r"(test|bench)_", name) and os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        if not os.path.exists(os.path.join(old, name)):
            print(f"{name}: only in {new}")
            continue
        same = compare(os.path.join(old, name), path, name) and same
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
