#!/usr/bin/env python3
"""Checks that keep the documentation from drifting (the 'docs' test suite).

usage: docs_checks.py CHECK --source-root DIR

CHECK is one of
  paths         every repository-relative path named in README.md, docs/*.md, bench/*.md, .ci/run
                and the files under include/, tests/, scripts/ and examples/ exists (a file, a
                directory or a glob that matches something). A path is resolved against the
                repository root, include/, include/fp4fuse/ and the directory of the file naming
                it; URLs, paths under a build directory and names of built executables are not
                paths of the repository.
  tables        no markdown table appears in more than one of README.md, docs/*.md and the `///`
                comments of include/fp4fuse: two tables are the same table when their header rows
                are equal, or their first columns share at least two entries and at least half of
                the shorter one (after dropping markup, parentheses and case). Each table lives
                in one place; the others link to it.
  exp-accuracy  every statement of the accuracy of fp4fuse's portable exp ("N ulp" within a
                sentence or two of "exp", in README.md, docs/*.md, include/ and tests/) gives the
                same number of ulp.

Each check prints what it looked at and one line `file:line: ...` per problem; exit status 1 when
there is a problem, 0 otherwise.
"""
import argparse
import glob
import os
import re
import sys

SKIP_DIRS = {".git", "build", "builddir", "__pycache__", "subprojects"}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def walk(root, top, exts=None):
    """Files under root/top (relative paths), sorted, skipping build and VCS directories."""
    out = []
    for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for f in sorted(files):
            if exts is None or f.endswith(exts):
                out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def markdown_files(root):
    files = ["README.md"] + sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    return [f for f in files if os.path.isfile(os.path.join(root, f))]


# ----------------------------------------------------------------------------------------------
# paths

PATH_PREFIXES = (".ci", "tests", "docs", "include", "examples", "bench", "scripts", "cmake", "fp4fuse",
                 "detail", "kernels", "epilogue")
PATH_RE = re.compile(r"(?<![A-Za-z0-9_./$@{}-])((?:%s)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*])" %
                     "|".join(re.escape(p) for p in PATH_PREFIXES))
URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")


def path_sources(root):
    files = markdown_files(root)
    files += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "bench", "*.md")))
    if os.path.isfile(os.path.join(root, ".ci", "run")):
        files.append(os.path.join(".ci", "run"))
    for top in ("include", "tests", "scripts", "examples"):
        files += walk(root, top)
    seen, out = set(), []
    for f in files:
        if f not in seen and not f.endswith((".pyc", ".o", ".png", ".jpg")):
            seen.add(f)
            out.append(f)
    return out


def built_product(root, bases, path):
    """True for names of things a build makes from the sources (executables such as
    tests/test_e2m1 or bench/bench_gemm, Meson test names such as kernels/quantize)."""
    name = os.path.basename(path)
    if "." in name:
        return False
    if name.startswith("test_") and path.startswith("tests/"):
        return True
    return any(os.path.isfile(os.path.join(b, path + ext)) for b in bases for ext in (".cu", ".cuh", ".cpp"))


def check_paths(root):
    problems, count = [], 0
    for rel in path_sources(root):
        text = read(os.path.join(root, rel))
        here = os.path.dirname(os.path.join(root, rel))
        bases = [root, os.path.join(root, "include"), os.path.join(root, "include", "fp4fuse"), here]
        for lineno, line in enumerate(text.split("\n"), 1):
            line = URL_RE.sub(" ", line)
            for m in PATH_RE.finditer(line):
                path = m.group(1).rstrip(".")
                if "..." in path:
                    continue
                count += 1
                if any(ch in path for ch in "*?["):
                    found = any(glob.glob(os.path.join(b, path), recursive=True) for b in bases)
                else:
                    found = any(os.path.exists(os.path.join(b, path)) for b in bases)
                if not found and not built_product(root, bases, path):
                    problems.append(f"{rel}:{lineno}: names `{path}`, which does not exist")
    print(f"paths: {count} path references in {len(path_sources(root))} files")
    return problems


# ----------------------------------------------------------------------------------------------
# tables

def normalize_cell(cell):
    c = cell.replace("\\|", "|").replace("`", "").replace("**", "").replace("*", "")
    c = re.sub(r"\([^()]*\)", " ", c)
    c = re.sub(r"\s+", " ", c).strip().lower()
    return c


def split_row(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)]


def tables_in(rel, text):
    """(first line number, header cells, first-column cells) of each markdown table in the text;
    for headers, only tables inside `///` comments."""
    lines = text.split("\n")
    header_file = rel.endswith((".cuh", ".hpp"))
    rows = []
    for n, line in enumerate(lines, 1):
        if header_file:
            m = re.match(r"^\s*///\s?(.*)$", line)
            rows.append((n, m.group(1) if m else None))
        else:
            rows.append((n, line))
    tables, i = [], 0
    while i + 1 < len(rows):
        n, t = rows[i]
        sep = rows[i + 1][1]
        if (t is not None and t.strip().startswith("|") and sep is not None and
                re.match(r"^\s*\|?\s*:?-{2,}", sep.strip()) and set(sep.strip()) <= set("|-: ")):
            header = split_row(t)
            body = []
            j = i + 2
            while j < len(rows) and rows[j][1] is not None and rows[j][1].strip().startswith("|"):
                body.append(split_row(rows[j][1]))
                j += 1
            tables.append((n, header, [r[0] for r in body if r]))
            i = j
        else:
            i += 1
    return tables


def check_tables(root):
    sources = markdown_files(root) + [f for f in walk(root, "include", (".cuh", ".hpp"))]
    tables = []
    for rel in sources:
        for n, header, first in tables_in(rel, read(os.path.join(root, rel))):
            tables.append((rel, n, tuple(normalize_cell(c) for c in header),
                           {normalize_cell(c) for c in first if normalize_cell(c)}))
    print(f"tables: {len(tables)} markdown tables in {len(sources)} files")
    problems = []
    for a in range(len(tables)):
        for b in range(a + 1, len(tables)):
            fa, la, ha, ca = tables[a]
            fb, lb, hb, cb = tables[b]
            if fa == fb:
                continue
            shared = ca & cb
            why = None
            if ha == hb:
                why = f"the same header row | {' | '.join(ha)} |"
            elif len(shared) >= 2 and 2 * len(shared) >= min(len(ca), len(cb)):
                why = "the same first column: " + ", ".join(sorted(shared))
            if why:
                problems.append(f"{fa}:{la}: table repeated at {fb}:{lb} ({why}); keep one and link to it")
    return problems


# ----------------------------------------------------------------------------------------------
# exp accuracy

EXP_WORD = re.compile(r"\bexp(?:f|_portable)?\b")
ULP = re.compile(r"\b(\d+(?:\.\d+)?)\s*ulp\b")
WINDOW = 160  # characters before an "N ulp" in which the statement must name exp


def prose_paragraphs(rel, text):
    """(first line, joined text, [(offset, line)]) of each paragraph: markdown paragraphs, or runs of
    comment lines (`//`, `///`, `#`) in code, with comment markers removed; string literals count
    too (test names)."""
    code = not rel.endswith(".md")
    paras, cur, start = [], [], None

    def flush():
        nonlocal cur, start
        if cur:
            paras.append((start, cur))
        cur, start = [], None

    for n, line in enumerate(text.split("\n"), 1):
        if code:
            m = re.match(r"^\s*(?:///?|#)\s?(.*)$", line)
            piece = m.group(1) if m else " ".join(re.findall(r'"([^"]*)"', line))
            if not m and not piece:
                flush()
                continue
        else:
            piece = line
            if not piece.strip():
                flush()
                continue
        if start is None:
            start = n
        cur.append((n, piece))
        if code and not m:
            flush()
    flush()
    out = []
    for start, pieces in paras:
        joined, offsets = "", []
        for n, piece in pieces:
            offsets.append((len(joined), n))
            joined += piece.strip() + " "
        out.append((joined, offsets))
    return out


def line_at(offsets, pos):
    line = offsets[0][1]
    for off, n in offsets:
        if off <= pos:
            line = n
    return line


def check_exp_accuracy(root):
    sources = markdown_files(root) + walk(root, "include", (".cuh", ".hpp")) + walk(root, "tests", (".cu", ".cuh", ".hpp"))
    statements = []
    for rel in sources:
        for joined, offsets in prose_paragraphs(rel, read(os.path.join(root, rel))):
            for m in ULP.finditer(joined):
                before = joined[max(0, m.start() - WINDOW):m.start()]
                if EXP_WORD.search(before):
                    phrase = joined[max(0, m.start() - 40):m.end() + 20].strip()
                    statements.append((rel, line_at(offsets, m.start()), float(m.group(1)), phrase))
    print(f"exp-accuracy: {len(statements)} statements of the portable exp's accuracy:")
    for rel, line, value, phrase in statements:
        print(f"  {rel}:{line}: {value:g} ulp: ...{phrase}...")
    values = sorted({s[2] for s in statements})
    if len(values) <= 1:
        return []
    problems = [f"the statements disagree: {', '.join(f'{v:g} ulp' for v in values)}; state one accuracy (what "
                "tests/activation.cu checks) everywhere"]
    counts = {v: sum(1 for s in statements if s[2] == v) for v in values}
    for rel, line, value, phrase in statements:
        others = [f"{v:g}" for v in values if v != value]
        problems.append(f"{rel}:{line}: says {value:g} ulp where other statements say {' / '.join(others)} ulp "
                        f"({counts[value]} of {len(statements)} statements say {value:g})")
    return problems


CHECKS = {"paths": check_paths, "tables": check_tables, "exp-accuracy": check_exp_accuracy}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--source-root", required=True)
    args = parser.parse_args()
    root = os.path.realpath(args.source_root)
    problems = CHECKS[args.check](root)
    for p in problems:
        print("FAIL " + p)
    print(f"{args.check}: {'FAIL, ' + str(len(problems)) + ' problem(s)' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
