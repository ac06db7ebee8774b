#!/usr/bin/env python3
"""Compiles the CuTe DSL MoE L1 examples (bridges/python/examples/moe_l1_cute_dsl.py, its
ping-pong variant moe_l1_cute_dsl_pingpong.py, and the Blackwell moe_l1_cute_dsl_sm100.py) without a
GPU (CUTE_DSL_ARCH): the Hopper examples' warp-specialized TMA + wgmma GEMMs (fp32 out, bf16 out,
fused SwiGLU -> NVFP4; the ping-pong one at its four tile shapes) for sm_90a, the epilogue kernel
for sm_90a and sm_100a (wgmma is sm_90a-only), and the Blackwell example's TMA + tcgen05 GEMMs
(fp32 out, bf16 out, fused) for sm_100a. Checks the PTX: the target, no `call` and no `.extern .func`
(the bridge linked and inlined), no local memory, wgmma + TMA loads + setmaxnreg in every Hopper
GEMM, TMA stores in the two dense Hopper GEMMs and none in the fused one, tcgen05.mma +
tcgen05.ld 32x32b + tcgen05.wait::ld + tcgen05.fence + TMA loads in every Blackwell GEMM, the hardware
`cvt.rn.satfinite.e2m1x2` in the sm_100a epilogue and the Blackwell fused GEMM only; and that asking
for the Blackwell example on sm_90a fails with its sentence, not a ptxas error. SKIP (77) without
nvidia-cutlass-dsl or the bitcode."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "python", "examples")


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def run_compile(arch, which, example):
    env = dict(os.environ, CUTE_DSL_ARCH=arch)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "python"), env.get("PYTHONPATH", "")])
    # in a scratch directory: --keep-ptx writes the PTX files into the working directory
    return subprocess.run([sys.executable, "-W", "ignore", os.path.join(EXAMPLES, example), "--compile-only", which], env=env,
                          capture_output=True, text=True, timeout=900, cwd=tempfile.mkdtemp())


def compile_for(arch, which, example="moe_l1_cute_dsl.py"):
    r = run_compile(arch, which, example)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        print(f"FAIL: compiling the example's {which} for {arch} failed (rc {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        sys.exit(1)
    return json.loads(lines[-1])


def main():
    try:
        import cutlass  # noqa: F401
    except ImportError:
        skip("nvidia-cutlass-dsl is not installed (pip install 'nvidia-cutlass-dsl==4.8.1')")
    bc = os.environ.get("FP4FUSE_BITCODE_DIR")
    if not bc or not os.path.exists(os.path.join(bc, "fp4fuse_sm90a.bc")):
        skip(f"no bitcode in FP4FUSE_BITCODE_DIR={bc!r} (meson compile fp4fuse_bitcode)")
    fails, checks = [], 0

    def expect(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            fails.append(what)

    def expect_linked(name, f, arch):
        """One GEMM kernel for `arch`, the bridge linked and inlined: no call, no unresolved extern."""
        expect(f["target"] == [arch], f"{name}: PTX target {f['target']}, not {arch}")
        expect(len(f["entries"]) == 1, f"{name}: {len(f['entries'])} kernels, not 1")
        expect(f["calls"] == 0, f"{name}: {f['calls']} calls left (the bridge not inlined)")
        expect(f["externs"] == [], f"{name}: unresolved externs {f['externs']}")

    gemms = compile_for("sm_90a", "gemm")
    expect(sorted(gemms) == ["bf16", "fp32", "nvfp4"], f"cooperative GEMM variants {sorted(gemms)}")
    pingpong = compile_for("sm_90a", "gemm", "moe_l1_cute_dsl_pingpong.py")
    expect(len(pingpong) == 12, f"{len(pingpong)} ping-pong GEMM variants compiled, expected 12 (3 outputs x 4 tiles)")
    gemms.update({"pingpong_" + k: v for k, v in pingpong.items()})
    for name, f in sorted(gemms.items()):
        print(f"sm_90a GEMM {name}: {json.dumps(f)[:400]}")
        expect_linked(name, f, "sm_90a")
        expect(f["local"] == 0, f"{name}: {f['local']} local-memory accesses (register spills or fragments in memory)")
        expect(f["wgmma"] > 0, f"{name}: no wgmma")
        expect(f["tma_load"] > 0, f"{name}: no TMA load")
        expect(f["setmaxnreg"] > 0, f"{name}: no setmaxnreg (warp specialization)")
        expect(f["e2m1_cvt"] == 0, f"{name}: hardware E2M1 cvt on sm_90a (ptxas would reject it)")
        expect((f["tma_store"] > 0) == ("nvfp4" not in name), f"{name}: {f['tma_store']} TMA stores")
    for arch in ("sm_90a", "sm_100a"):
        f = compile_for(arch, "epilogue")["epilogue"]
        print(f"{arch} epilogue: {json.dumps(f)[:400]}")
        expect(f["target"] == [arch], f"epilogue {arch}: PTX target {f['target']}")
        expect(f["calls"] == 0 and f["externs"] == [], f"epilogue {arch}: calls {f['calls']}, externs {f['externs']}")
        expect(f["local"] == 0, f"epilogue {arch}: {f['local']} local-memory accesses")
        if arch == "sm_100a":
            expect(f["e2m1_cvt"] >= 8, f"epilogue sm_100a: {f['e2m1_cvt']} hardware E2M1 cvt, expected >= 8 (16 values per block)")
        else:
            expect(f["e2m1_cvt"] == 0, f"epilogue sm_90a: {f['e2m1_cvt']} hardware E2M1 cvt, expected the software path")
    # the Blackwell example: TMA + tcgen05 (UMMA into tensor memory), the epilogue from tcgen05.ld rows
    sm100 = compile_for("sm_100a", "gemm", "moe_l1_cute_dsl_sm100.py")
    expect(sorted(sm100) == ["bf16", "fp32", "nvfp4"], f"sm100 GEMM variants {sorted(sm100)}")
    for name, f in sorted(sm100.items()):
        print(f"sm_100a GEMM sm100_{name}: {json.dumps(f)[:400]}")
        expect_linked(f"sm100_{name}", f, "sm_100a")
        expect(f["local"] == 0 and f["local_any"] == 0,
               f"sm100_{name}: local memory in the PTX ({f['local']} accesses, {f['local_any']} mentions of .local)")
        expect(f["tcgen05_mma"] > 0, f"sm100_{name}: no tcgen05.mma")
        # 8 pieces of 128 x 32 per 128 x 256 tile, each one 32x32b.x32 load and its wait
        expect(f["tcgen05_ld"] == 8, f"sm100_{name}: {f['tcgen05_ld']} tcgen05.ld 32x32b, expected 8")
        expect(f["tcgen05_wait_ld"] >= 8, f"sm100_{name}: {f['tcgen05_wait_ld']} tcgen05.wait::ld, expected one per load")
        # after_thread_sync once the accumulator barrier passed; before/after around the dealloc barrier
        expect(f["tcgen05_fence"] >= 3, f"sm100_{name}: {f['tcgen05_fence']} tcgen05.fence, expected 3")
        expect(f["tma_load"] > 0, f"sm100_{name}: no TMA load")
        expect(f["wgmma"] == 0, f"sm100_{name}: wgmma in a Blackwell kernel")
        if name == "nvfp4":
            # 8 blocks of 16 outputs per thread and tile, 8 cvt (2 values each) per block
            expect(f["e2m1_cvt"] >= 64, f"sm100_nvfp4: {f['e2m1_cvt']} hardware E2M1 cvt, expected >= 64")
        else:
            expect(f["e2m1_cvt"] == 0, f"sm100_{name}: {f['e2m1_cvt']} E2M1 cvt in a GEMM that does not quantize")
    # ... and on sm_90a it must refuse with its sentence before code generation
    r = run_compile("sm_90a", "gemm", "moe_l1_cute_dsl_sm100.py")
    out = r.stdout + r.stderr
    print(f"sm_90a sm100 example: rc {r.returncode}, {out.strip().splitlines()[-1][:300] if out.strip() else 'no output'}")
    expect(r.returncode != 0, "the sm100 example compiled for sm_90a instead of refusing")
    expect("compile target sm_90a does not have" in out and "compile for sm_100a" in out,
           f"the sm100 example on sm_90a did not fail with its sentence:\n{out[-1500:]}")
    expect("ptxas" not in out.lower(), "the sm100 example on sm_90a reached ptxas")
    if fails:
        print("FAIL: " + "; ".join(fails))
        return 1
    print(f"PASS: {checks} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
