#!/usr/bin/env python3
"""Ahead-of-time compile test of fp4fuse.triton_ext (no GPU needed): every test kernel and the MoE
example's kernels compiled with `triton.compile` for sm_90a and sm_100a/sm_120a (`GPUTarget`), the
target's bitcode linked through `extern_libs`; the PTX must hold no `call` and no extern function
(every C ABI function inlined), ptxas must accept it (a cubin comes back), and the E2M1 `cvt`
appears exactly on the Blackwell targets. Also: the import refuses an untested Triton and a
missing bitcode file with a sentence.

usage: aot_compile.py [--quick]    (exit 77 = SKIP when Triton or the bitcode is missing)
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bridges", "python", "examples"))

try:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:
    print("SKIP: Triton is not installed (pip install triton==3.6.0)")
    sys.exit(77)
try:
    import fp4fuse.triton_ext as f4t
except ImportError as e:
    if "are missing from" in str(e):  # no bitcode built (no clang): nothing to link
        print(f"SKIP: {e}")
        sys.exit(77)
    raise

import kernels as K  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL", what, flush=True)


def compile_one(fn, signature, constexprs, cap, name, attrs=None):
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    opts = {"extern_libs": tuple(f4t.extern_libs(cap).items())}
    try:
        cc = triton.compile(src, target=GPUTarget("cuda", cap, 32), options=opts)
    except Exception as e:  # ptxas (unresolved extern) or a lowering error: report it whole
        check(False, f"{name} sm_{cap}a: compile failed: {str(e).strip().splitlines()[-1][:300]}")
        return None
    ptx = cc.asm["ptx"]
    calls = re.findall(r"^\s*call(\.uni)?\b.*$", ptx, re.M)
    check(not calls, f"{name} sm_{cap}a: {len(calls)} call instruction(s) in the PTX")
    check(".extern .func" not in ptx, f"{name} sm_{cap}a: an extern function is left in the PTX")
    check(len(cc.asm.get("cubin", b"")) > 0, f"{name} sm_{cap}a: no cubin")
    check(f".target sm_{cap}a" in ptx, f"{name} sm_{cap}a: PTX target is not sm_{cap}a")
    return ptx


ELEM_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "u_ptr": "*i32", "out_ptr": "*i32", "n": "i32", "WHICH": "constexpr",
            "BLOCK": "constexpr"}
TILE_SIG = {"gu_ptr": "*fp32", "S_ptr": "*fp32", "packed_ptr": "*u8", "scale_ptr": "*u8", "row_S_ptr": "*fp32", "M": "i32",
            "I": "i32", "GATE_UP": "constexpr", "ACT": "constexpr", "FORMAT": "constexpr", "LAYOUT": "constexpr",
            "S_MODE": "constexpr", "BM": "constexpr", "BN": "constexpr"}
GROUPED_SIG = {"gu_ptr": "*fp32", "S_ptr": "*fp32", "offsets_ptr": "*i32", "starts_ptr": "*i32", "packed_ptr": "*u8",
               "scale_ptr": "*u8", "I": "i32", "ACT": "constexpr", "FORMAT": "constexpr", "PER_EXPERT_S": "constexpr",
               "BM": "constexpr", "BN": "constexpr"}


def main():
    quick = "--quick" in sys.argv
    t0 = time.time()
    targets = [90, 100, 120]
    n = 0
    for cap in targets:
        hw = cap >= 100
        # Elementwise: every ABI function (the E2M1 encoders must use the cvt exactly on Blackwell).
        for which, name in enumerate(K.ELEMENTWISE):
            if (quick or cap == 120) and which not in (0, 14, 19):
                continue
            ptx = compile_one(K.elementwise_kernel, ELEM_SIG, {"WHICH": which, "BLOCK": 256}, cap, f"elementwise {name}")
            n += 1
            if ptx is not None and name in ("e2m1_encode", "e2m1x8"):
                check(("cvt.rn.satfinite.e2m1x2.f32" in ptx) == hw,
                      f"elementwise {name} sm_{cap}a: E2M1 cvt {'missing' if hw else 'present'}")
        # Tiles: each format through the interleaved-8 swizzled path; split/linear, per-row S, grouped.
        tiles = [(0, 0, f, 1, 0) for f in range(4)] + [(1, 2, 0, 0, 0), (0, 4, 2, 0, 0), (0, 0, 0, 1, 2),
                                                      (0, 1, 1, 0, 1), (0, 3, 3, 1, 0)]
        for gate_up, act, fmt, layout, s_mode in (tiles[:2] if quick else tiles):
            cx = dict(GATE_UP=gate_up, ACT=act, FORMAT=fmt, LAYOUT=layout, S_MODE=s_mode, BM=64,
                      BN=256 if s_mode == 2 else 64)
            ptx = compile_one(K.swiglu_quantize_kernel, TILE_SIG, cx, cap, f"tile {cx}")
            n += 1
            if ptx is not None:
                check(("cvt.rn.satfinite.e2m1x2.f32" in ptx) == hw,
                      f"tile {cx} sm_{cap}a: E2M1 cvt {'missing' if hw else 'present'}")
        for fmt in ((0,) if quick else (0, 2)):
            compile_one(K.grouped_swiglu_quantize_kernel, GROUPED_SIG,
                        dict(ACT=0, FORMAT=fmt, PER_EXPERT_S=True, BM=64, BN=64), cap, f"grouped fmt {fmt}")
            n += 1
    # The example's fused MoE GEMM (Hopper: sm_90a only; its wgmma path is what the H200 runs).
    try:
        import moe_l1_kernel as ex
    except ImportError as e:
        check(False, f"example: cannot import moe_l1_kernel: {e}")
        ex = None
    if ex is not None:
        for act in (0, 2):
            sig, cx, attrs = ex.aot_signature(fused=True, act=act)
            compile_one(ex.moe_l1_kernel, sig, cx, 90, f"example fused act {act}", attrs)
            n += 1
    # Import-time refusals, in fresh interpreters.
    env = dict(os.environ)
    code = "from fp4fuse.triton_ext._version import check_triton_version as c; c('3.5.1')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    check(p.returncode != 0 and "was tested with Triton 3.6.0, not 3.5.1" in p.stderr,
          f"untested Triton: import did not refuse it with the sentence ({p.stderr.strip()[-200:]})")
    env["FP4FUSE_BITCODE_DIR"] = HERE  # holds no .bc files
    p = subprocess.run([sys.executable, "-c", "import fp4fuse.triton_ext"], capture_output=True, text=True, env=env)
    check(p.returncode != 0 and "fp4fuse_sm90a.bc" in p.stderr and "missing" in p.stderr,
          f"missing bitcode: import did not refuse it with the sentence ({p.stderr.strip()[-200:]})")
    print(f"{n} kernels compiled for sm_90a/sm_100a/sm_120a in {time.time() - t0:.0f} s, {len(failures)} failures")
    if failures:
        sys.exit(1)
    print("PASS: no call, no extern function, ptxas accepted every kernel; E2M1 cvt exactly on sm_100a/sm_120a")


if __name__ == "__main__":
    main()
