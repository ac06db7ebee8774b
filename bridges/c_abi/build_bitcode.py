#!/usr/bin/env python3
"""Builds fp4fuse_<target>.bc, the C ABI (fp4fuse_c.cu) as plain LLVM bitcode for CuTe DSL and Triton.

    build_bitcode.py --clang clang-19 --cuda /usr/local/cuda --target sm90a --out fp4fuse_sm90a.bc

Steps (the recipe NVIDIA's NCCL uses for its CuTe DSL device API):
 1. clang -x cuda --cuda-device-only -emit-llvm -O1 (opt, llvm-dis and llvm-as are taken from
    clang's own directory, so that the bitcode versions match).
 2. opt: internalize everything but the fp4fuse_* C API, drop what is then unused.
 3. Text clean-up (llvm-dis -> edit -> llvm-as), each for a reason:
    - the `nvvm-reflect-ftz` module flag goes: it would impose clang's flush-to-zero default on
      the kernel the bitcode is linked into (the DSL sets its own);
    - explicit `align N` on function definitions goes: libNVVM rejects it;
    - `target-cpu` / `target-features` attributes go: the DSL's libNVVM compiles for its own target
      (sm_100a/sm_120a bitcode is compiled by clang as sm_90a, see below);
    - generic intrinsics the NVVM IR specification does not list (nvvm_intrinsics.txt) are renamed
      to the NVVM intrinsic of the same semantics (RENAMES) or expanded into plain instructions
      (_expand); check_nvvm_ir.py then verifies that none is left.
 4. check_nvvm_ir.py on the result (fails the build on any intrinsic outside the NVVM IR list).

Targets: sm80 is the software path of everything (E4M3 too: its `cvt` needs sm_89); sm90a is the
software E2M1 path with the E4M3 `cvt` (sm_89, sm_90, sm_90a). sm100a and sm120a
select the library's hardware `cvt` path through the predicate nvcc's device pass would set
(`__CUDA_ARCH_FAMILY_SPECIFIC__` 1000 / 1200): clang up to 19 has no sm_100a target, and the
instructions sit in inline PTX that only ptxas (in the DSL, for the kernel's real target) reads.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# target -> extra defines; the clang target is sm_90a except for sm80 (see the module comment).
TARGETS = {
    "sm80": [],
    "sm90a": [],
    "sm100a": ["-D__CUDA_ARCH_FAMILY_SPECIFIC__=1000", "-D__CUDA_ARCH_SPECIFIC__=1000"],
    "sm120a": ["-D__CUDA_ARCH_FAMILY_SPECIFIC__=1200", "-D__CUDA_ARCH_SPECIFIC__=1200"],
}

# Generic intrinsics outside the NVVM IR list (nvvm_intrinsics.txt) that clang emits for the
# library's code, renamed to the NVVM intrinsic of the same operands and semantics (PTX abs.f32,
# min.f32, max.f32: what nvcc emits for the same source; min/max return the other operand for one NaN).
RENAMES = {
    "llvm.fabs.f32": ("llvm.nvvm.fabs.f", "declare float @llvm.nvvm.fabs.f(float)"),
    "llvm.minnum.f32": ("llvm.nvvm.fmin.f", "declare float @llvm.nvvm.fmin.f(float, float)"),
    "llvm.maxnum.f32": ("llvm.nvvm.fmax.f", "declare float @llvm.nvvm.fmax.f(float, float)"),
}
# ... and those expanded into plain instructions (icmp/select/sub, bit tests for is.fpclass).
_CALL = re.compile(r"^(\s*)(%[-\w.$]+) = (?:tail |musttail |notail )?call (?:[\w]+(?:\([^)]*\))? )*?"
                   r"(i1|i16|i32|i64) @(llvm\.(?:umax|umin|smax|smin|usub\.sat|is\.fpclass)\.(?:i16|i32|i64|f32))"
                   r"\(([^()]*)\)(.*)$", re.M)
_counter = [0]
NVVM_DATALAYOUT = ("e-p:64:64:64-p3:32:32:32-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-"
                   "f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64")


def _fresh():
    _counter[0] += 1
    return f"%fp4fuse.x{_counter[0]}"


def _operands(ops):
    out = []
    for o in ops.split(","):
        toks = o.split()
        out.append((toks[0], toks[-1]))  # type, value (attributes such as noundef in between)
    return out


def _is_fpclass_f32(ind, res, x, mask):
    lines, terms = [], []
    def emit(rhs):
        v = _fresh()
        lines.append(f"{ind}{v} = {rhs}")
        return v
    b = emit(f"bitcast float {x} to i32")
    a = emit(f"and i32 {b}, 2147483647")
    neg = emit(f"icmp slt i32 {b}, 0")
    pos = emit(f"xor i1 {neg}, true")
    if mask & 1:
        lo = emit(f"icmp ugt i32 {a}, 2139095040")
        hi = emit(f"icmp ult i32 {a}, 2143289344")
        terms.append(emit(f"and i1 {lo}, {hi}"))
    if mask & 2:
        terms.append(emit(f"icmp uge i32 {a}, 2143289344"))
    # magnitude classes: (negative bit, positive bit, test of |x|'s bits)
    for nbit, pbit, test in ((2, 9, "eq_inf"), (3, 8, "norm"), (4, 7, "sub"), (5, 6, "zero")):
        n, p_ = bool(mask & (1 << nbit)), bool(mask & (1 << pbit))
        if not (n or p_):
            continue
        if test == "eq_inf":
            m = emit(f"icmp eq i32 {a}, 2139095040")
        elif test == "norm":
            d = emit(f"sub i32 {a}, 8388608")
            m = emit(f"icmp ult i32 {d}, 2130706432")
        elif test == "sub":
            d = emit(f"sub i32 {a}, 1")
            m = emit(f"icmp ult i32 {d}, 8388607")
        else:
            m = emit(f"icmp eq i32 {a}, 0")
        if n and p_:
            terms.append(m)
        else:
            terms.append(emit(f"and i1 {m}, {neg if n else pos}"))
    if not terms:
        lines.append(f"{ind}{res} = and i1 false, false")
        return lines
    acc = terms[0]
    for t in terms[1:-1]:
        acc = emit(f"or i1 {acc}, {t}")
    if len(terms) == 1:
        lines.append(f"{ind}{res} = or i1 {acc}, false")
    else:
        lines.append(f"{ind}{res} = or i1 {acc}, {terms[-1]}")
    return lines


def _expand(m):
    ind, res, _, name, ops = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
    args = _operands(ops)
    kind, ty = name[len("llvm."):].rsplit(".", 1)
    if kind == "is.fpclass":
        return "\n".join(_is_fpclass_f32(ind, res, args[0][1], int(args[1][1])))
    (t, x), (_, y) = args
    c = _fresh()
    if kind == "usub.sat":
        d = _fresh()
        return (f"{ind}{c} = icmp ugt {t} {x}, {y}\n{ind}{d} = sub {t} {x}, {y}\n"
                f"{ind}{res} = select i1 {c}, {t} {d}, {t} 0")
    pred = {"umax": "ugt", "umin": "ult", "smax": "sgt", "smin": "slt"}[kind]
    return f"{ind}{c} = icmp {pred} {t} {x}, {y}\n{ind}{res} = select i1 {c}, {t} {x}, {t} {y}"


def tool(clang, name):
    """The LLVM tool `name` from clang's own installation (same version), else from PATH."""
    real = os.path.realpath(shutil.which(clang) or clang)
    cand = os.path.join(os.path.dirname(real), name)
    if os.path.exists(cand):
        return cand
    found = shutil.which(name)
    if not found:
        sys.exit(f"build_bitcode.py: no `{name}` next to {real} or on PATH (install llvm-<version> with clang)")
    return found


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"build_bitcode.py: command failed ({r.returncode}):\n  {' '.join(cmd)}\n{r.stdout}")
    return r.stdout


def clean_ir(text):
    # 1. the nvvm-reflect-ftz module flag (its metadata node and its reference in !llvm.module.flags)
    m = re.search(r'^(![0-9]+) = !\{[^}]*"nvvm-reflect-ftz"[^}]*\}\n', text, re.M)
    if m:
        node = m.group(1)
        text = text.replace(m.group(0), "")
        def drop(mf):
            items = [s.strip() for s in mf.group(1).split(",") if s.strip() != node]
            return "!llvm.module.flags = !{" + ", ".join(items) + "}"
        text = re.sub(r"^!llvm\.module\.flags = !\{([^}]*)\}", drop, text, flags=re.M)
    # 1b. the data layout of the NVVM IR specification for 64-bit targets with 32-bit shared
    #     pointers (-fcuda-short-ptr), the one the DSL's modules carry: equal in meaning to clang's
    #     shorter string, and linking then does not warn about differing layouts
    text = re.sub(r'^target datalayout = "[^"]*"', 'target datalayout = "' + NVVM_DATALAYOUT + '"', text, count=1, flags=re.M)
    # 2. explicit alignment of function definitions
    text = re.sub(r"^(define .*?) align [0-9]+", r"\1", text, flags=re.M)
    # 3. target attributes
    text = re.sub(r' "target-(cpu|features)"="[^"]*"', "", text)
    # 4. intrinsics outside the NVVM IR list: renamed, or expanded into instructions
    for old, (new, decl) in RENAMES.items():
        if "@" + old + "(" in text:
            text = text.replace("@" + old + "(", "@" + new + "(")
    text = _CALL.sub(_expand, text)
    # declarations: one per intrinsic still called (a rename can leave two, an expansion none)
    seen = set()
    calls = set(re.findall(r"call [^\n]*?@(llvm\.[\w.]+)\(", text))
    def keep(md):
        name = md.group(1)
        if name in seen or name not in calls:
            return ""
        seen.add(name)
        return md.group(0)
    text = re.sub(r"^declare [^\n]*@(llvm\.[\w.]+)\(.*\n", keep, text, flags=re.M)
    for new, decl in RENAMES.values():
        if "@" + new + "(" in text and not re.search(r"^declare [^\n]*@" + re.escape(new) + r"\(", text, re.M):
            text += decl + "\n"
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clang", required=True)
    ap.add_argument("--cuda", required=True, help="CUDA toolkit root (has include/ and include/cccl)")
    ap.add_argument("--target", required=True, choices=sorted(TARGETS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--std", default="c++17")
    ap.add_argument("--depfile", help="write the headers read (make syntax) here, for the build system")
    args = ap.parse_args()

    out = os.path.abspath(args.out)
    work = out + ".d"
    os.makedirs(work, exist_ok=True)
    raw, internal, ll = (os.path.join(work, n) for n in ("raw.bc", "internal.bc", "clean.ll"))
    cuda_inc = os.path.join(args.cuda, "include")
    gpu_arch = "sm_80" if args.target == "sm80" else "sm_90a"
    run([args.clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=" + gpu_arch, "-fcuda-short-ptr", "--cuda-path=" + args.cuda,
         "-std=" + args.std, "-O1", "-emit-llvm", "-c", "-Wno-unknown-cuda-version",
         # toolkit first: its texture_fetch_functions.h (CUDA 12) wins over the empty CUDA 13 stand-in
         "-I" + cuda_inc, "-I" + os.path.join(cuda_inc, "cccl"), "-I" + os.path.join(HERE, "clang_compat"),
         "-I" + os.path.join(ROOT, "include"), *TARGETS[args.target],
         *(["-MD", "-MF", os.path.abspath(args.depfile), "-MT", out] if args.depfile else []),
         os.path.join(HERE, "fp4fuse_c.cu"), "-o", raw])
    run([tool(args.clang, "opt"), "--passes=internalize,globaldce", "-internalize-public-api-list=fp4fuse_*",
         raw, "-o", internal])
    text = run([tool(args.clang, "llvm-dis"), internal, "-o", "-"])
    with open(ll, "w") as f:
        f.write(clean_ir(text))
    run([tool(args.clang, "llvm-as"), ll, "-o", out])
    check = os.path.join(HERE, "check_nvvm_ir.py")
    r = subprocess.run([sys.executable, check, "--llvm-dis", tool(args.clang, "llvm-dis"), out])
    if r.returncode != 0:
        os.remove(out)
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
