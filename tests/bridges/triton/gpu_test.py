#!/usr/bin/env python3
"""GPU test of fp4fuse.triton_ext: every elementwise function and every tile helper bit-compared
with the C++ library's templates (libfp4fuse_triton_ref.so, built from reference.cu by nvcc) on
random and adversarial inputs (NaN, +-Inf, -0, subnormals, E2M1 and E4M3 ties, saturation), every
output byte compared (both sides poisoned with different bytes first, so an unwritten byte differs).

usage: gpu_test.py LIBREF.so [--shard i/n] [--build NVCC INCLUDE_DIR] [--example]
    (FP4FUSE_SEED=n repeats a run; exit 77 without a GPU)
--build: compiles LIBREF.so from reference.cu with NVCC first when it does not exist (sm_90a).
--example: afterwards runs the MoE example's check (bridges/python/examples/moe_l1_triton.py).
--shard i/n runs every n-th case from i (the shards together run every case once; in parallel
processes they share Triton's compile time).
"""
import ctypes
import os
import sys
import time

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed (the GPU test moves data with torch tensors)")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA GPU visible")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if "--build" in sys.argv and not os.path.exists(sys.argv[1]):
    nvcc, include = sys.argv[sys.argv.index("--build") + 1:sys.argv.index("--build") + 3]
    cmd = [nvcc, "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90a,code=sm_90a",
           "-I", include, os.path.join(HERE, "reference.cu"), "-o", sys.argv[1]]
    print("building the C++ reference:", " ".join(cmd), flush=True)
    import subprocess
    if subprocess.run(cmd).returncode != 0:
        print("FAIL: the C++ reference library did not build")
        sys.exit(1)
import fp4fuse.triton_ext as f4t  # noqa: E402
import kernels as K  # noqa: E402

SEED = int(os.environ.get("FP4FUSE_SEED", time.time_ns() % (1 << 31)))
print(f"seed {SEED} (FP4FUSE_SEED={SEED} repeats this run)", flush=True)
gen = torch.Generator(device="cuda").manual_seed(SEED)
dev = torch.device("cuda")
EXT = f4t.extern_libs()
lib = ctypes.CDLL(sys.argv[1])
failures = []
SHARD, SHARDS = (int(v) for v in (sys.argv[sys.argv.index("--shard") + 1].split("/") if "--shard" in sys.argv else (0, 1)))
_case = [0]


def mine():
    """True for the cases of this shard (call once per case, in the same order in every shard)."""
    _case[0] += 1
    return (_case[0] - 1) % SHARDS == SHARD


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL", what, flush=True)


def err_buf():
    return ctypes.create_string_buffer(512)


def ptr(t):
    return ctypes.c_void_p(t.data_ptr()) if t is not None else ctypes.c_void_p(0)


def adversarial_floats(n, scale=1.0):
    """n floats: random normal at several magnitudes, random bit patterns, and the special values."""
    r = torch.randn(n, device=dev, generator=gen) * scale
    mag = torch.pow(2.0, torch.randint(-20, 20, (n,), device=dev, generator=gen).float())
    r = torch.where(torch.rand(n, device=dev, generator=gen) < 0.3, r * mag, r)
    bits = torch.randint(-(1 << 31), (1 << 31) - 1, (n,), device=dev, generator=gen, dtype=torch.int64).to(torch.int32)
    r = torch.where(torch.rand(n, device=dev, generator=gen) < 0.1, bits.view(torch.float32), r)
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 6.5, 7.0, 464.0, 448.0, 2.0 ** -10, 1.5 * 2.0 ** -10,
                         2.0 ** -9, 2.0 ** -6, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-40,
                         1.4e-45, 3.4e38, 2688.0, 1e30], device=dev)
    ties = torch.cat([ties, -ties])
    idx = torch.randint(0, n, (n // 8,), device=dev, generator=gen)
    r[idx] = ties[torch.randint(0, ties.numel(), (n // 8,), device=dev, generator=gen)] * \
        torch.pow(2.0, torch.randint(-3, 4, (n // 8,), device=dev, generator=gen).float())
    return r.contiguous()


def bits_equal(a, b):
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


# ---- elementwise ---------------------------------------------------------------------------------
def test_elementwise():
    n = 1 << 16
    a = adversarial_floats(n)
    b = adversarial_floats(n)
    # S arguments (recipes) are finite and positive: the codecs' precondition.
    s_pos = torch.exp(torch.randn(n, device=dev, generator=gen) * 8).clamp(1e-30, 1e30)
    s_pos[:64] = torch.tensor([1.0, 2688.0, 448.0, 6.0], device=dev).repeat(16)
    u = torch.cat([torch.arange(256, device=dev, dtype=torch.int32),
                   torch.randint(0, 256, (n - 256,), device=dev, generator=gen, dtype=torch.int32)])
    a8 = adversarial_floats(8 * n)
    for which, name in enumerate(K.ELEMENTWISE):
        if not mine():
            continue
        bb = s_pos if 6 <= which <= 9 else b
        aa = a8 if which == 19 else a
        out_t = torch.full((n,), 0x5A5A5A5A, dtype=torch.int32, device=dev)
        out_r = torch.full((n,), 0x3C3C3C3C, dtype=torch.int32, device=dev)
        K.elementwise_kernel[(n // 256,)](aa, bb, u, out_t, n, WHICH=which, BLOCK=256, extern_libs=EXT)
        e = err_buf()
        rc = lib.fp4fuse_ref_elementwise(which, ptr(aa), ptr(bb), ptr(u), ptr(out_r), n, e)
        torch.cuda.synchronize()
        check(rc == 0, f"elementwise {name}: reference failed: {e.value.decode()}")
        diff = int((out_t != out_r).sum())
        check(diff == 0, f"elementwise {name}: {diff} of {n} results differ")
        print(f"elementwise {name}: {n} values, {diff} differ", flush=True)


# ---- tiles ---------------------------------------------------------------------------------------
FORMATS = ["nvfp4 te_exact", "nvfp4 vllm", "mxfp4 mx_ocp", "mxfp4 mx_round_up"]
ACTS = ["swiglu", "swiglu_fast", "swiglu_clamped", "swiglu_clamped_fast", "geglu_tanh"]


def gate_up_input(M, I):
    """[M, 2I] fp32: normal values with rows scaled over 2^-12..2^12, some whole blocks of zeros or
    huge values, and adversarial values sprinkled in."""
    x = torch.randn(M, 2 * I, device=dev, generator=gen) * 2
    x *= torch.pow(2.0, torch.randint(-12, 13, (M, 1), device=dev, generator=gen).float())
    flat = x.view(-1)
    k = flat.numel() // 50
    idx = torch.randint(0, flat.numel(), (k,), device=dev, generator=gen)
    flat[idx] = adversarial_floats(k)
    blocks = x.view(M, -1, 16)
    pick = torch.rand(blocks.shape[0], blocks.shape[1], device=dev, generator=gen)
    blocks[pick < 0.03] = 0.0
    blocks[(pick > 0.03) & (pick < 0.05)] *= 1e20
    return x.contiguous()


def sizes(M, I, fmt, layout):
    B = 16 if fmt <= 1 else 32
    if layout == 0:
        return M * I // 2, M * (I // B), M, I // B
    pr, pc = (M + 127) // 128 * 128, (I // B + 3) // 4 * 4
    return M * I // 2, pr * pc, pr, pc


def run_pair(M, I, gu, gate_up, act, fmt, layout, s_mode, S, BM=64, BN=64, row_S_in=None):
    pk_bytes, sc_bytes, pr, pc = sizes(M, I, fmt, layout)
    B = 16 if fmt <= 1 else 32
    outs = []
    for poison in (0xA5, 0x5A):
        outs.append((torch.full((pk_bytes,), poison, dtype=torch.uint8, device=dev),
                     torch.full((sc_bytes,), poison, dtype=torch.uint8, device=dev),
                     torch.full((M,), float("nan"), device=dev)))
    (pt, st, rt), (pr_, sr, rr) = outs
    e = err_buf()
    rc = lib.fp4fuse_ref_swiglu_quantize(ptr(gu), 0, M, I, gate_up, act, fmt, layout, ptr(S),
                                         ptr(rr) if s_mode else ctypes.c_void_p(0), ptr(pr_), ptr(sr),
                                         ctypes.c_void_p(0), e)
    torch.cuda.synchronize()
    if rc != 0:
        return f"reference failed: {e.value.decode()}"
    if s_mode == 1:
        S_arg = rr if row_S_in is None else row_S_in
    else:
        S_arg = S
    bn = BN if s_mode != 2 else max(64, 1 << (pc * B - 1).bit_length())
    grid = ((pr + BM - 1) // BM, (pc * B + bn - 1) // bn)
    K.swiglu_quantize_kernel[grid](gu, S_arg, pt, st, rt, M, I, GATE_UP=gate_up, ACT=act, FORMAT=fmt, LAYOUT=layout,
                                   S_MODE=s_mode, BM=BM, BN=bn, extern_libs=EXT)
    torch.cuda.synchronize()
    msgs = []
    dp, ds = int((pt != pr_).sum()), int((st != sr).sum())
    if dp:
        msgs.append(f"{dp} of {pk_bytes} packed bytes differ")
    if ds:
        msgs.append(f"{ds} of {sc_bytes} scale bytes differ")
    if s_mode == 2 and not bits_equal(rt, rr):
        msgs.append(f"{int((rt.view(torch.int32) != rr.view(torch.int32)).sum())} of {M} row scales differ")
    return "; ".join(msgs)


def test_tiles():
    M, I = 300, 160
    gu = gate_up_input(M, I)
    S_values = [torch.tensor([v], device=dev) for v in (2688.0 / 37.0, 1e-3, 3e5)]
    cases = []
    for fmt in range(4):
        for act in range(5):
            cases.append((0, act, fmt, 1, 0))  # interleaved<8>, swizzled
        cases.append((0, 0, fmt, 0, 0))  # linear
        cases.append((1, 0, fmt, 1, 0))  # split gate first (two tiles)
        cases.append((1, 0, fmt, 0, 0))
    for fmt in (0, 1):
        for layout in (0, 1):
            cases.append((0, 0, fmt, layout, 2))  # per-row S computed by the tile
            cases.append((0, 0, fmt, layout, 1))  # per-row S loaded
    n = 0
    for gate_up, act, fmt, layout, s_mode in cases:
        if not mine():
            continue
        for S in (S_values if s_mode == 0 and fmt <= 1 else S_values[:1]):
            what = (f"tile {['interleaved<8>', 'split'][gate_up]} {ACTS[act]} {FORMATS[fmt]} "
                    f"{['linear', 'swizzled_128x4'][layout]} S {['per tensor', 'per row loaded', 'per row computed'][s_mode]}"
                    f" {float(S):g}")
            msg = run_pair(M, I, gu, gate_up, act, fmt, layout, s_mode, S)
            check(msg == "", f"{what}: {msg}")
            n += 1
    print(f"tiles: {n} configurations (shard {SHARD}/{SHARDS}) of [{M}, {I}] compared byte for byte, {len(failures)} failures so far",
          flush=True)


def grouped_starts(counts, convention):
    starts, before, off = [], 0, 0
    for e, c in enumerate(counts):
        if convention == "padded_prefix_sum":
            starts.append(before)
        else:
            starts.append((off + 127 * e + 127) // 128 * 128)
        before += (c + 127) // 128 * 128
        off += c
    return starts


def test_grouped():
    I, E = 160, 6
    counts = [130, 0, 5, 128, 77, 1]
    rows = sum(counts) + 20  # capacity beyond the routed rows
    gu = gate_up_input(rows, I)
    offsets = [0]
    for c in counts:
        offsets.append(offsets[-1] + c)
    S_e = torch.exp(torch.randn(E, device=dev, generator=gen)) * 30
    for fmt in range(4):
        B = 16 if fmt <= 1 else 32
        pc = (I // B + 3) // 4 * 4
        padded_rows = (rows + 127 * E + 127) // 128 * 128
        for convention in ("padded_prefix_sum", "offset_bound"):
            for per_expert in (False, True):
                if not mine():
                    continue
                starts = grouped_starts(counts, convention)
                ref_p = torch.full((rows * I // 2,), 0x5A, dtype=torch.uint8, device=dev)
                ref_s = torch.zeros(padded_rows * pc, dtype=torch.uint8, device=dev)
                tri_p = torch.full((rows * I // 2,), 0xA5, dtype=torch.uint8, device=dev)
                tri_s = torch.full((padded_rows * pc,), 0xA5, dtype=torch.uint8, device=dev)
                in_band = torch.zeros(padded_rows, dtype=torch.bool, device=dev)
                for e in range(E):
                    band = (counts[e] + 127) // 128 * 128
                    in_band[starts[e]:starts[e] + band] = True
                    if counts[e] == 0:
                        continue
                    o = offsets[e]
                    err = err_buf()
                    s_ptr = ctypes.c_void_p(S_e.data_ptr() + 4 * e if per_expert else S_e.data_ptr())
                    rc = lib.fp4fuse_ref_swiglu_quantize(
                        ctypes.c_void_p(gu.data_ptr() + o * 2 * I * 4), 0, counts[e], I, 0, 0, fmt, 1, s_ptr,
                        ctypes.c_void_p(0), ctypes.c_void_p(ref_p.data_ptr() + o * I // 2),
                        ctypes.c_void_p(ref_s.data_ptr() + starts[e] * pc), ctypes.c_void_p(0), err)
                    check(rc == 0, f"grouped reference: {err.value.decode()}")
                # Gaps and the tail belong to no expert: the caller clears them (here exactly those).
                tri_s.view(padded_rows, pc)[~in_band] = 0
                ref_p[offsets[-1] * I // 2:] = 0xA5  # rows beyond the routed ones: written by neither
                max_band = max((c + 127) // 128 * 128 for c in counts)
                grid = (E, max_band // 64, pc * B // 64 if pc * B % 64 == 0 else pc * B // 64 + 1)
                K.grouped_swiglu_quantize_kernel[grid](
                    gu, S_e, torch.tensor(offsets, dtype=torch.int32, device=dev),
                    torch.tensor(starts, dtype=torch.int32, device=dev), tri_p, tri_s, I, ACT=0, FORMAT=fmt,
                    PER_EXPERT_S=per_expert, BM=64, BN=64, extern_libs=EXT)
                torch.cuda.synchronize()
                dp, ds = int((tri_p != ref_p).sum()), int((tri_s != ref_s).sum())
                check(dp == 0 and ds == 0, f"grouped {FORMATS[fmt]} {convention} per_expert={per_expert}: "
                      f"{dp} packed, {ds} scale bytes differ")
    print(f"grouped: configurations of shard {SHARD}/{SHARDS}, counts {counts}, {len(failures)} failures so far", flush=True)


test_elementwise()
test_tiles()
test_grouped()
if failures:
    print(f"FAILED: {len(failures)} checks (seed {SEED})")
    sys.exit(1)
print(f"PASS: every helper of shard {SHARD}/{SHARDS} bit-identical to the C++ library (seed {SEED})")
if "--example" in sys.argv:
    import subprocess
    ex = os.path.join(HERE, "..", "..", "..", "bridges", "python", "examples", "moe_l1_triton.py")
    sys.exit(subprocess.run([sys.executable, ex, sys.argv[1], "--check"]).returncode)
