#!/usr/bin/env python3
"""Compiles a CuTe DSL kernel per exported fp4fuse symbol (all of them, through fp4fuse.cute_dsl)
for sm_90a and sm_100a without a GPU (CUTE_DSL_ARCH, fake tensors) and checks the PTX: the target,
no `call` and no unresolved `.extern .func` (everything linked and inlined), the hardware
`cvt.rn.satfinite.e2m1x2` on sm_100a only, and no local-memory traffic from the register
fragments; the same for the epilogue example of docs/CUTE_DSL.md. Also: a hardware bitcode pinned for an sm_90a kernel, a missing bitcode directory and
a wrong argument count fail with sentences at compile time. SKIP (77) without nvidia-cutlass-dsl."""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_error(kernel, tensor):
    """The sentence that compiling a one-thread launch of `kernel(tensor)` raises; None if it compiles."""
    import cutlass.cute as cute

    @cute.jit
    def host(y: cute.Tensor):
        kernel(y).launch(grid=[1, 1, 1], block=[1, 1, 1])

    try:
        cute.compile(host, tensor)
        return None
    except Exception as e:
        return str(e)


def worker(arch, mode):
    import cutlass.cute as cute
    import cute_harness as h

    from fp4fuse import cute_dsl as f4

    if mode == "all":
        host = h.make_host(h.NAMES, 256)
        t0 = time.time()
        c = cute.compile(host, *h.fake_tensors(len(h.NAMES), 256), options="--keep-ptx")
        ptx = c.__ptx__
        kernels = re.findall(r"^\.visible \.entry (\S+)\(", ptx, re.M)
        out = {
            "seconds": round(time.time() - t0, 1),
            "target": re.findall(r"^\.target (\S+)", ptx, re.M),
            "kernels": len(kernels),
            "calls": len(re.findall(r"^\s*call(\.uni)?\b", ptx, re.M)),
            "externs": re.findall(r"^\.extern \.func.*", ptx, re.M),
            "e2m1_cvt": len(re.findall(r"cvt\.rn\.satfinite\.e2m1x2\.f32", ptx)),
            "e4m3_cvt": len(re.findall(r"cvt\.rn\.satfinite\.e4m3x2\.f32", ptx)),
            "local": len(re.findall(r"\b(ld|st)\.local\b", ptx)),
            "dsl": f4.DSL_VERSION,
        }
        print(json.dumps(out))
        return 0
    if mode == "docs":
        # the epilogue example of docs/CUTE_DSL.md, verbatim, compiled for this target
        doc = open(os.path.join(HERE, "..", "..", "docs", "CUTE_DSL.md")).read()
        code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
        # the DSL reads a kernel's source: import the example from a file, not through exec()
        import importlib.util
        import tempfile

        path = os.path.join(tempfile.mkdtemp(), "cute_dsl_doc_example.py")
        with open(path, "w") as f:
            f.write(code)
        spec = importlib.util.spec_from_file_location("cute_dsl_doc_example", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        from cutlass import Float32, Uint8, Uint32

        epilogue = mod.epilogue

        @cute.jit
        def host_doc(a: cute.Tensor, S: Float32, p: cute.Tensor, sc: cute.Tensor):
            epilogue(a, S, p, sc).launch(grid=[1, 1, 1], block=[32, 1, 1])

        mk = cute.runtime.make_fake_compact_tensor
        c = cute.compile(host_doc, mk(Float32, (32, 32), stride_order=(1, 0)), Float32(1.0),
                         mk(Uint32, (32, 2), stride_order=(1, 0)), mk(Uint8, (32,)), options="--keep-ptx")
        ptx = c.__ptx__
        print(json.dumps({"calls": len(re.findall(r"^\s*call(\.uni)?\b", ptx, re.M)),
                          "e2m1_cvt": len(re.findall(r"cvt\.rn\.satfinite\.e2m1x2\.f32", ptx)),
                          "local": len(re.findall(r"\b(ld|st)\.local\b", ptx))}))
        return 0
    if mode == "old_dsl":
        # a DSL release outside SUPPORTED_DSL: the import fails with a sentence
        import cutlass

        cutlass.__version__ = "4.2.0"
        sys.modules.pop("fp4fuse.cute_dsl", None)
        os.environ.pop("FP4FUSE_CUTE_DSL_ANY_VERSION", None)
        try:
            import fp4fuse.cute_dsl  # noqa: F401
            print(json.dumps({mode: None}))
        except ImportError as e:
            print(json.dumps({mode: str(e)}))
        return 0
    # failure modes: each must raise with a sentence during compilation
    import fp4fuse.cute_dsl as f4m

    msgs = {}
    one = ("fp4fuse_e2m1x8",)
    if mode == "wrong_target":
        f4m.force_target("sm100a")
    if mode == "missing_file":
        os.environ["FP4FUSE_BITCODE_DIR"] = HERE  # a directory without bitcode
    if mode == "bad_args":
        import cutlass

        @cute.kernel
        def k(y: cute.Tensor):
            y[0] = f4m.e2m1x8(cutlass.Float32(1.0))

        msgs[mode] = compile_error(k, cute.runtime.make_fake_compact_tensor(cutlass.Uint32, (4,)))
        print(json.dumps(msgs))
        return 0
    if mode in ("bias_no_count", "up_bias_no_up", "wrong_dtype", "short_frag", "byte_types"):
        # arguments the symbols would misread silently: refused while the kernel is traced
        import cutlass
        from cutlass import BFloat16, Float8E4M3FN, Float32, Int32, Uint8, Uint32

        n_acc = 16 if mode == "short_frag" else 32
        bias_given = mode == "bias_no_count"

        @cute.kernel
        def k2(y: cute.Tensor):
            rmem = cute.make_rmem_tensor
            acc = rmem(cute.make_layout(n_acc), Float32)
            for j in range(cute.size(acc)):
                acc[j] = y[j]
            packed, scales, amax = rmem(cute.make_layout(2), Uint32), rmem(cute.make_layout(1), Uint8), rmem(cute.make_layout(1), Float32)
            if cutlass.const_expr(mode == "wrong_dtype"):
                x = rmem(cute.make_layout(16), BFloat16)
                for j in range(16):
                    x[j] = BFloat16(y[j])
                f4m.FUNCTIONS["fp4fuse_nvfp4_te_exact_quantize"](x, Float32(1.0), packed, scales)
            elif cutlass.const_expr(mode == "byte_types"):
                # packed words and scale bytes in other types of the same bits: accepted
                x = rmem(cute.make_layout(16), Float32)
                for j in range(16):
                    x[j] = y[j]
                words, sf = rmem(cute.make_layout(2), Int32), rmem(cute.make_layout(1), Float8E4M3FN)
                f4m.FUNCTIONS["fp4fuse_nvfp4_te_exact_quantize"](x, Float32(1.0), words, sf)
                amax[0] = Float32(words[0])
            elif cutlass.const_expr(mode == "up_bias_no_up"):
                f4m.swiglu_quantize_row(acc, packed, scales, amax, out=16, S=Float32(1.0), up_bias=y.iterator, bias_count=32)
            else:
                f4m.swiglu_quantize_row(acc, packed, scales, amax, out=16, S=Float32(1.0),
                                        bias=(y.iterator if cutlass.const_expr(bias_given) else None))
            y[0] = amax[0]

        msgs[mode] = compile_error(k2, cute.runtime.make_fake_compact_tensor(cutlass.Float32, (64,)))
        print(json.dumps(msgs))
        return 0
    try:
        cute.compile(h.make_host(one, 32), *h.fake_tensors(1, 32))
        msgs[mode] = None
    except Exception as e:
        msgs[mode] = f"{type(e).__name__}: {e}"
    print(json.dumps(msgs))
    return 0


def start(arch, mode):
    env = dict(os.environ, CUTE_DSL_ARCH=arch, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, __file__, "--worker", arch, mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=os.environ.get("TMPDIR", "/tmp"))


def finish(p, arch, mode):
    stdout, stderr = p.communicate()
    r = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        print(f"FAIL: {arch} {mode}: exit {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
        return None
    return json.loads(lines[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.path.insert(0, HERE)
        return worker(sys.argv[2], sys.argv[3])
    try:
        import cutlass  # noqa: F401
    except ImportError:
        print("SKIP: nvidia-cutlass-dsl is not installed for this Python (pip install nvidia-cutlass-dsl==4.8.1)")
        return 77
    try:
        from fp4fuse import bitcode

        for t in ("sm90a", "sm100a"):
            bitcode.bitcode_path(t)
    except FileNotFoundError as e:
        print(f"SKIP: {e}")
        return 77
    sys.path.insert(0, HERE)
    import cute_harness as h

    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)

    # the two targets compile in parallel (each is one process of the DSL)
    procs = {arch: start(arch, "all") for arch in ("sm_90a", "sm_100a")}
    for arch in ("sm_90a", "sm_100a"):
        out = finish(procs[arch], arch, "all")
        if out is None:
            failures.append(arch)
            continue
        print(f"{arch}: {out['kernels']} kernels compiled in {out['seconds']} s (nvidia-cutlass-dsl {out['dsl']}); "
              f"calls {out['calls']}, extern funcs {len(out['externs'])}, e2m1 cvt {out['e2m1_cvt']}, "
              f"e4m3 cvt {out['e4m3_cvt']}, local ld/st {out['local']}")
        check(out["target"] == [arch], f"{arch}: PTX target {out['target']}")
        check(out["kernels"] == len(h.NAMES), f"{arch}: {out['kernels']} kernels for {len(h.NAMES)} symbols")
        check(out["calls"] == 0, f"{arch}: {out['calls']} calls left in the PTX (the bitcode was not inlined)")
        check(not out["externs"], f"{arch}: unresolved externs {out['externs'][:3]}")
        check(out["local"] == 0, f"{arch}: {out['local']} local-memory loads/stores")
        if arch == "sm_100a":
            check(out["e2m1_cvt"] > 0, "sm_100a: no cvt.rn.satfinite.e2m1x2 (hardware path not taken)")
        else:
            check(out["e2m1_cvt"] == 0, f"sm_90a: {out['e2m1_cvt']} cvt.rn.satfinite.e2m1x2 (would not assemble)")
        check(out["e4m3_cvt"] > 0, f"{arch}: no E4M3 cvt")
    for arch in ("sm_90a", "sm_100a"):
        out = finish(start(arch, "docs"), arch, "docs")
        ok = out is not None and out["calls"] == 0 and out["local"] == 0 and ((out["e2m1_cvt"] > 0) == (arch == "sm_100a"))
        check(ok, f"{arch}: the docs/CUTE_DSL.md epilogue example: {out}")
        if ok:
            print(f"{arch}: the docs/CUTE_DSL.md epilogue example compiles (no call, e2m1 cvt {out['e2m1_cvt']})")
    expect = {"wrong_target": ("sm100a", "sm_90a"), "missing_file": ("fp4fuse_sm90a.bc", "FP4FUSE_BITCODE_DIR"),
              "bad_args": ("e2m1x8", "takes 8 arguments"), "old_dsl": ("supports nvidia-cutlass-dsl", "this is 4.2.0"),
              "bias_no_count": ("swiglu_quantize_row", "without bias_count"), "up_bias_no_up": ("up_bias", "pass up="),
              "wrong_dtype": ("nvfp4_te_exact_quantize: x points to float", "Float32, not BFloat16"),
              "short_frag": ("row_swiglu_nvfp4_te_exact_i8_o16: acc must hold at least 32 float values", "this tensor has 16 x 32 bits")}
    out = finish(start("sm_90a", "byte_types"), "sm_90a", "byte_types")
    check(out is not None and out.get("byte_types") is None,
          f"byte_types: Int32 packed words and Float8E4M3FN scale bytes were refused: {out}")
    for mode, words in expect.items():
        out = finish(start("sm_90a", mode), "sm_90a", mode)
        msg = (out or {}).get(mode)
        check(msg is not None and all(w in msg for w in words), f"{mode}: did not fail with a sentence naming {words}: {msg}")
        if msg:
            print(f"{mode}: {msg.splitlines()[0][:200]}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"compiled all {len(h.NAMES)} exported symbols and the docs example for sm_90a and sm_100a; PTX checks and {len(expect)} error sentences passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
