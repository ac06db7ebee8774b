#!/usr/bin/env python3
"""Compiles every `\\code ... \\endcode` example of the public headers, so the examples cannot drift
from the API.

usage: snippets.py --source-root DIR --nvcc NVCC [--gencode PAIR] [--keep DIR] [--list]

Each block in include/fp4fuse/**/*.cuh|hpp (Doxygen `///` comments; `\\snippet FILE ID` blocks too)
goes into one generated .cu file that includes <fp4fuse/fp4fuse.cuh> and the block's own header,
with `#line` directives that point back at the header, so a compile error names the header and
the line of the example:

  - a block with a line that starts a declaration only valid at file scope (`__global__`,
    `template`, `struct`, `namespace`, ...; FILE_SCOPE_STARTS below) is placed at file scope, in
    a namespace of its own;
  - any other block is a function body: it goes into a scope of its own inside a function
    (`__host__`, or `__device__` for the headers listed in HEADER_CONTEXT) that first declares
    the free names the examples use (PRELUDE, then in a nested scope HEADER_CONTEXT's: x, S, M,
    K, packed, scales, stream, ...). A block may declare the same names again (its own scope
    shadows the prelude's).

The file is compiled once with `nvcc -c` (host and device, sm_90a by default). Every error is
attributed to the example whose lines (or prelude) it names; the failing examples are reported
as `header:line: example does not compile` with nvcc's messages, removed, and the rest compiled
again until it compiles cleanly, so one broken example does not hide another.

An example is skipped only when it says so: `\\code // not compiled: <reason>` (the marker on the
`\\code` line or on the block's first line). Skipped examples are listed with their reason.
Exit status 1 when any example fails (or nothing can be compiled), 0 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# Declarations that only make sense at file scope: a block with a line that starts with one of
# them goes to file scope. (`using` and `static_assert` are valid in a function too: a block of
# only those stays in one, next to the prelude.)
FILE_SCOPE_STARTS = ("__global__", "__device__", "__host__", "template", "struct", "class", "union", "enum",
                     "namespace", "extern", "inline", "#include")

# Free names the function-scope examples use, declared before each of them. Only standard and CUDA
# types: the library's own names go into HEADER_CONTEXT, per header, so that a rename in the
# library breaks only the examples of the header that uses it (and says so).
PRELUDE = """\
[[maybe_unused]] float x[16] = {};
[[maybe_unused]] float block[16] = {};
[[maybe_unused]] float gate = 0.5f, up = 2.0f;
[[maybe_unused]] float S = 448.0f, amax = 6.0f, tensor_amax = 6.0f, global_encode_scale = 448.0f;
[[maybe_unused]] std::uint8_t scale = 0x38, sf = 0x38;
[[maybe_unused]] std::uint64_t packed = 0;
[[maybe_unused]] constexpr std::int64_t M = 128, K = 256, I = 256, m = 1, k = 16;
[[maybe_unused]] constexpr std::int64_t row0 = 0, col0 = 0, m0 = 0, n0 = 0;
[[maybe_unused]] std::uint8_t* scales = nullptr;
[[maybe_unused]] float* d_amax = nullptr;
[[maybe_unused]] float* d_S = nullptr;
[[maybe_unused]] cudaStream_t stream = nullptr;
[[maybe_unused]] const __nv_bfloat16* gate_up = nullptr;
[[maybe_unused]] __nv_bfloat16* h = nullptr;
[[maybe_unused]] __nv_bfloat16* y = nullptr;
"""

# Per header (path relative to include/fp4fuse, or a directory prefix ending in '/'): the
# function's execution space and declarations added after PRELUDE (later ones shadow earlier
# ones).
HEADER_CONTEXT = {
    "mxfp4.cuh": {"prelude": "[[maybe_unused]] float x[32] = {};\n"},
    "kernels/": {"prelude": "[[maybe_unused]] const __nv_bfloat16* x = nullptr;\n"
                            "[[maybe_unused]] std::uint8_t* packed = nullptr;\n"},
    "matrix_view.cuh": {"prelude": "[[maybe_unused]] const __nv_bfloat16* d_x = nullptr;\n"},
    "quantized_matrix.cuh": {"prelude": "[[maybe_unused]] std::uint8_t* packed = nullptr;\n"},
    "scale_layout.cuh": {"prelude": "[[maybe_unused]] constexpr std::int64_t capacity = 4096;\n"
                                    "[[maybe_unused]] constexpr int E = 256;\n"
                                    "[[maybe_unused]] const std::int32_t* d_expert_offsets = nullptr;\n"},
    "status.hpp": {"prelude": "[[maybe_unused]] const __nv_bfloat16* d_x = nullptr;\n"},
    "launch.cuh": {"prelude": "[[maybe_unused]] const float* d_bias = nullptr;\n"},
    "epilogue/swiglu_quantize.cuh": {
        "space": "__device__",
        "prelude": "[[maybe_unused]] const float* d_S = nullptr;\n"
                   "[[maybe_unused]] constexpr std::int64_t gate_up_col0 = 0;\n"
                   "[[maybe_unused]] const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{};\n",
    },
}

SKIP_MARKER = re.compile(r"//\s*not compiled:\s*(.*\S)")
CODE_START = re.compile(r"^\s*///?\s*[\\@]code(\{[^}]*\})?(.*)$")
CODE_END = re.compile(r"^\s*///?\s*[\\@]endcode\b")
SNIPPET = re.compile(r"^\s*///?\s*[\\@]snippet(?:\{[^}]*\})?\s+(\S+)\s+(\S+)")
COMMENT_PREFIX = re.compile(r"^\s*///? ?")


class Example:
    def __init__(self, header, line, body_lines, skip_reason=None, origin=None):
        self.header = header          # path relative to the source root, e.g. include/fp4fuse/e2m1.cuh
        self.line = line              # line of the \code (or \snippet) command, 1-based
        self.body_lines = body_lines  # [(source line number, text)]
        self.skip_reason = skip_reason
        self.origin = origin or header  # the file the body lines come from (\snippet: another file)

    @property
    def where(self):
        return f"{self.header}:{self.line}"

    def first_statement(self):
        for _, text in self.body_lines:
            stripped = text.strip()
            if stripped and not stripped.startswith("//"):
                return stripped
        return ""

    def file_scope(self):
        for _, text in self.body_lines:
            t = text.strip()
            if any(t == s or t.startswith(s + " ") or t.startswith(s + "<") for s in FILE_SCOPE_STARTS):
                return True
        return False


def header_context(rel):
    space, prelude = "__host__", ""
    for key, ctx in HEADER_CONTEXT.items():
        if rel == key or (key.endswith("/") and rel.startswith(key)):
            space = ctx.get("space", space)
            prelude += ctx.get("prelude", "")
    return space, prelude


def snippet_block(root, header, line, path, ident):
    """The lines between the two `[ident]` markers of a \\snippet's file."""
    candidates = [os.path.join(root, path), os.path.join(root, "include", path),
                  os.path.join(root, "examples", path), os.path.join(root, "tests", path)]
    for c in candidates:
        if os.path.isfile(c):
            with open(c, encoding="utf-8") as f:
                lines = f.read().split("\n")
            marks = [i for i, t in enumerate(lines) if ident in t]
            if len(marks) >= 2:
                origin = os.path.relpath(c, root)
                return origin, [(i + 1, lines[i]) for i in range(marks[0] + 1, marks[1])], None
            return None, [], f"\\snippet {path} {ident}: the block markers `{ident}` are not in {os.path.relpath(c, root)}"
    return None, [], f"\\snippet {path} {ident}: {path} not found"


def extract(root):
    """Every example of every header under include/fp4fuse, and the problems found while reading them."""
    examples, problems = [], []
    include = os.path.join(root, "include", "fp4fuse")
    headers = []
    for dirpath, _, files in os.walk(include):
        headers += [os.path.join(dirpath, f) for f in files if f.endswith((".cuh", ".hpp"))]
    for path in sorted(headers):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        i = 0
        while i < len(lines):
            text = lines[i]
            m = CODE_START.match(text)
            s = SNIPPET.match(text)
            if s:
                origin, body, err = snippet_block(root, rel, i + 1, s.group(1), s.group(2))
                if err:
                    problems.append(f"{rel}:{i + 1}: {err}")
                else:
                    skip = SKIP_MARKER.search(text)
                    examples.append(Example(rel, i + 1, body, skip.group(1) if skip else None, origin))
            elif m:
                start = i
                body = []
                skip = SKIP_MARKER.search(m.group(2) or "")
                i += 1
                while i < len(lines) and not CODE_END.match(lines[i]):
                    body.append((i + 1, COMMENT_PREFIX.sub("", lines[i], count=1)))
                    i += 1
                if i == len(lines):
                    problems.append(f"{rel}:{start + 1}: \\code without \\endcode")
                    break
                if not skip and body:
                    skip = SKIP_MARKER.search(body[0][1])
                examples.append(Example(rel, start + 1, body, skip.group(1) if skip else None))
            i += 1
    return examples, problems


def generate(examples):
    """The generated translation unit, and for each of its lines the index of the example it belongs to."""
    out, owner = [], []

    def emit(text, who=None):
        for piece in text.split("\n"):
            out.append(piece)
            owner.append(who)

    emit("// Generated by tests/docs/snippets.py from the \\code examples of include/fp4fuse: do not edit.")
    emit("#include <fp4fuse/fp4fuse.cuh>")
    for h in sorted({e.header for e in examples}):
        emit(f"#include <{os.path.relpath(h, 'include')}>")
    emit("#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_runtime.h>\n"
         "#include <cstdint>\n#include <cstdio>\n#include <vector>")
    for n, e in enumerate(examples):
        rel = os.path.relpath(e.header, os.path.join("include", "fp4fuse"))
        emit("")
        emit(f"// example {n}: {e.where}")
        body_first = e.body_lines[0][0] if e.body_lines else e.line
        if e.file_scope():
            emit(f"namespace fp4fuse_doc_example_{n} {{", n)
            emit(f'#line {body_first} "{e.origin}"', n)
            for _, text in e.body_lines:
                emit(text, n)
            emit(f'#line {len(out) + 2} "@GENERATED@"', n)
            emit(f"}}  // namespace fp4fuse_doc_example_{n}", n)
        else:
            space, extra = header_context(rel)
            emit(f"{space} void fp4fuse_doc_example_{n}() {{", n)
            emit(PRELUDE + "{\n" + extra + "{", n)
            emit(f'#line {body_first} "{e.origin}"', n)
            for _, text in e.body_lines:
                emit(text, n)
            emit(f'#line {len(out) + 2} "@GENERATED@"', n)
            emit("}\n}\n}", n)
    return out, owner


LOCATION = [
    re.compile(r"(?P<file>[^\s():\"]+)\((?P<line>\d+)\)"),          # nvcc front end: file(12): error
    re.compile(r"(?P<file>[^\s():\"]+):(?P<line>\d+):(?:\d+:)?"),   # host compiler: file:12:3: error
    re.compile(r"line (?P<line>\d+) of \"?(?P<file>[^\s\"]+)\"?"),  # detected during ... at line 12 of file
]


def error_blocks(output):
    """nvcc's output split into one block per diagnostic (a line naming `error`, `warning` or
    `note`, and the indented lines that follow it)."""
    blocks, current = [], []
    for line in output.split("\n"):
        if re.search(r"\b(error|warning|remark|note|catastrophic)\b", line) and not line.startswith((" ", "\t")):
            if current:
                blocks.append(current)
            current = [line]
        elif line.strip() and not re.match(r"^\d+ errors? detected in the compilation", line.strip()):
            current.append(line)
    if current:
        blocks.append(current)
    return blocks


def attribute(output, examples, owner, generated):
    """Indices of the examples that nvcc's errors name; and the error blocks that name none."""
    by_range = {}
    for n, e in enumerate(examples):
        if e.body_lines:
            by_range.setdefault(os.path.normpath(e.origin), []).append(
                (e.body_lines[0][0], e.body_lines[-1][0], n))
    failing, unattributed = {}, []
    for block in error_blocks(output):
        if not any(re.search(r"\berror\b|catastrophic", l) for l in block[:1]):
            continue
        names = set()
        for l in block:
            for pat in LOCATION:
                for m in pat.finditer(l):
                    f, line = os.path.normpath(m.group("file")), int(m.group("line"))
                    if os.path.basename(f) == os.path.basename(generated) and 0 < line <= len(owner):
                        if owner[line - 1] is not None:
                            names.add(owner[line - 1])
                        continue
                    for key, ranges in by_range.items():
                        if f == key or f.endswith(os.sep + key):
                            names.update(n for lo, hi, n in ranges if lo <= line <= hi)
        if names:
            for n in names:
                failing.setdefault(n, []).append("\n".join(block))
        else:
            unattributed.append("\n".join(block))
    return failing, unattributed


def compile_examples(args, examples, work):
    generated = os.path.join(work, "doc_examples.cu")
    lines, owner = generate(examples)
    text = "\n".join(lines).replace("@GENERATED@", generated)
    with open(generated, "w") as f:
        f.write(text + "\n")
    cmd = [args.nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-I", os.path.join(args.source_root, "include"),
           "-gencode", args.gencode, "-c", "-o", os.path.join(work, "doc_examples.o"), generated]
    proc = subprocess.run(cmd, cwd=args.source_root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout, owner, generated, cmd


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source-root", required=True)
    parser.add_argument("--nvcc", required=True)
    parser.add_argument("--gencode", default="arch=compute_90a,code=sm_90a")
    parser.add_argument("--keep", help="write the generated files to this directory (kept)")
    parser.add_argument("--list", action="store_true", help="list the examples and how each is placed, then exit")
    args = parser.parse_args()
    args.source_root = os.path.realpath(args.source_root)

    examples, problems = extract(args.source_root)
    if args.list:
        for e in examples:
            kind = "skipped: " + e.skip_reason if e.skip_reason else ("file scope" if e.file_scope() else "function")
            print(f"{e.where}: {kind}: {e.first_statement()}")
        return 0
    skipped = [e for e in examples if e.skip_reason]
    active = [e for e in examples if not e.skip_reason]
    print(f"snippets: {len(examples)} \\code examples in include/fp4fuse, {len(skipped)} marked `not compiled`")
    for e in skipped:
        print(f"skip {e.where}: not compiled: {e.skip_reason}")

    work = args.keep or tempfile.mkdtemp(prefix="fp4fuse-snippets-")
    os.makedirs(work, exist_ok=True)
    failed = {}  # example -> messages
    remaining = list(active)
    while remaining:
        status, output, owner, generated, cmd = compile_examples(args, remaining, work)
        if status == 0:
            break
        failing, unattributed = attribute(output, remaining, owner, generated)
        if not failing:
            print("FAIL: the generated file does not compile, and no error names an example:")
            print("$ " + " ".join(cmd))
            print(output)
            print(f"(generated file kept in {work})")
            return 1
        for n, msgs in failing.items():
            failed[remaining[n]] = msgs
        remaining = [e for n, e in enumerate(remaining) if n not in failing]

    for e in sorted(failed, key=lambda e: (e.header, e.line)):
        print(f"FAIL {e.where}: example does not compile:")
        for _, text in e.body_lines:
            print(f"    | {text}")
        for msg in failed[e]:
            print("    " + msg.replace("\n", "\n    "))
    for p in problems:
        print(f"FAIL {p}")
    ok = len(remaining) if remaining else 0
    print(f"snippets: {ok} compiled, {len(failed)} failed, {len(skipped)} skipped (nvcc -c -gencode {args.gencode})")
    if failed:
        print("Fix each failing example in its header, or mark it `\\code // not compiled: <reason>`.")
    if not args.keep:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
