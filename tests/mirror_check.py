#!/usr/bin/env python3
"""Tests mirror the include tree (the 'docs' suite's layout check).

usage: mirror_check.py --source-root DIR

Every header under include/fp4fuse/ has its test at the same path under tests/ with the extension
.cu (or .py): e2m1.cuh's is e2m1.cu, gemm/sm90/plan.cuh's gemm/sm90/plan.cu. Or it has a line in
tests/covered_elsewhere.txt naming the test files that cover it and why:

    detail/exp.cuh: activation.cu  # the portable exp against double precision

Checked:
  - every header has a mirrored test or a line, and no header has both (a stale line);
  - a mirrored .cu test compiles its header (as below) and is built: tests/meson.build (or a
    meson.build under tests/) names it; a mirrored .py test names the header;
  - every line names a header that exists and test files (relative to tests/) that exist;
  - each named test file compiles the header: the header is among the files it includes,
    directly or through other headers of the repository (#include <fp4fuse/...>, "fp4fuse/..."
    and "relative/paths"), so a line cannot name a test that no longer reaches it.

Prints one line `file: ...` per problem; exit status 1 when there is one, 0 otherwise.
"""
import argparse
import os
import re
import sys

HEADER_EXTS = (".cuh", ".hpp", ".h")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
COMMENT_RE = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)


def headers(include_root):
    out = []
    for d, _, files in os.walk(include_root):
        for f in files:
            if f.endswith(HEADER_EXTS):
                out.append(os.path.relpath(os.path.join(d, f), include_root))
    return sorted(out)


def includes_of(path, include_dir):
    """The repository files `path` includes (resolved), in order."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = COMMENT_RE.sub("", f.read())  # an #include in a comment compiles nothing
    found = []
    for kind, name in INCLUDE_RE.findall(text):
        candidates = []
        if kind == '"':
            candidates.append(os.path.join(os.path.dirname(path), name))
        candidates.append(os.path.join(include_dir, name))
        for c in candidates:
            if os.path.isfile(c):
                found.append(os.path.normpath(c))
                break
    return found


def closure(path, include_dir):
    seen, todo = set(), [os.path.normpath(path)]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(includes_of(p, include_dir))
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    args = ap.parse_args()
    root = os.path.abspath(args.source_root)
    include_dir = os.path.join(root, "include")
    include_root = os.path.join(include_dir, "fp4fuse")
    tests = os.path.join(root, "tests")
    map_path = os.path.join(tests, "covered_elsewhere.txt")
    problems = []
    if not os.path.isfile(map_path):
        print("tests/covered_elsewhere.txt: missing (it lists the headers tested elsewhere; it may hold only comments)")
        return 1
    # What the Meson files under tests/ name: 'path' strings relative to their own directory.
    built = set()
    for d, _, files in os.walk(tests):
        if "meson.build" in files:
            with open(os.path.join(d, "meson.build"), encoding="utf-8") as f:
                for name in re.findall(r"'([^']+\.cu)'", f.read()):
                    built.add(os.path.normpath(os.path.join(os.path.relpath(d, tests), name)))

    entries = {}
    with open(map_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            body = line.split("#", 1)[0].strip()
            if not body:
                continue
            if ":" not in body:
                problems.append(f"tests/covered_elsewhere.txt:{n}: expected 'header: test.cu [test.cu ...]  # why'")
                continue
            header, named = body.split(":", 1)
            header = header.strip()
            if header in entries:
                problems.append(f"tests/covered_elsewhere.txt:{n}: {header} listed twice")
            if "#" not in line:
                problems.append(f"tests/covered_elsewhere.txt:{n}: {header}: say why (a '# ...' comment)")
            entries[header] = (n, named.split())

    all_headers = headers(include_root)
    mirrored = 0
    for h in all_headers:
        stem = os.path.splitext(h)[0]
        has_mirror = any(os.path.isfile(os.path.join(tests, stem + ext)) for ext in (".cu", ".py"))
        mirrored += has_mirror
        target = os.path.normpath(os.path.join(include_root, h))
        cu = os.path.join(tests, stem + ".cu")
        if os.path.isfile(cu):
            if target not in closure(cu, include_dir):
                problems.append(f"tests/{stem}.cu: does not include include/fp4fuse/{h} (directly or through other headers)")
            if os.path.normpath(stem + ".cu") not in built:
                problems.append(f"tests/{stem}.cu: no meson.build under tests/ builds it")
        elif os.path.isfile(os.path.join(tests, stem + ".py")):
            with open(os.path.join(tests, stem + ".py"), encoding="utf-8") as f:
                if os.path.basename(h) not in f.read():
                    problems.append(f"tests/{stem}.py: does not name {os.path.basename(h)}")
        if has_mirror and h in entries:
            problems.append(f"tests/covered_elsewhere.txt:{entries[h][0]}: {h} has its mirrored test tests/{stem}.cu: drop the line")
        if not has_mirror and h not in entries:
            problems.append(f"include/fp4fuse/{h}: no test at tests/{stem}.cu and no line in tests/covered_elsewhere.txt")

    for h, (n, named) in sorted(entries.items()):
        target = os.path.normpath(os.path.join(include_root, h))
        if not os.path.isfile(target):
            problems.append(f"tests/covered_elsewhere.txt:{n}: no header include/fp4fuse/{h}")
            continue
        if not named:
            problems.append(f"tests/covered_elsewhere.txt:{n}: {h}: name the tests that cover it")
        for t in named:
            tp = os.path.join(tests, t)
            if not os.path.isfile(tp):
                problems.append(f"tests/covered_elsewhere.txt:{n}: {h}: no test file tests/{t}")
            elif target not in closure(tp, include_dir):
                problems.append(f"tests/covered_elsewhere.txt:{n}: {h}: tests/{t} does not include it (directly or through other headers)")

    for p in problems:
        print(p)
    print(f"{len(all_headers)} headers: {mirrored} with a mirrored test, {len(entries)} covered elsewhere; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
