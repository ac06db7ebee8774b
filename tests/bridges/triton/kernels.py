"""Test kernels of fp4fuse.triton_ext, shared by the ahead-of-time compile test (no GPU) and the
GPU comparison with the C++ library."""
import triton
import triton.language as tl

import fp4fuse.triton_ext as f4t

# (name, symbol arity) of every elementwise function, in the order of the C++ reference's `which`.
ELEMENTWISE = [
    "e2m1_encode", "e4m3_encode", "e2m1_decode", "e4m3_decode", "ue8m0_decode", "nvfp4_global_encode_scale",
    "nvfp4_te_exact_scale_code", "nvfp4_te_exact_multiplier", "nvfp4_vllm_scale_code", "nvfp4_vllm_multiplier",
    "mxfp4_mx_ocp_scale_code", "mxfp4_mx_ocp_multiplier", "mxfp4_mx_round_up_scale_code",
    "mxfp4_mx_round_up_multiplier", "swiglu", "swiglu_fast", "swiglu_clamped", "swiglu_clamped_fast", "geglu_tanh",
    "e2m1x8",
]


@triton.jit
def elementwise_kernel(a_ptr, b_ptr, u_ptr, out_ptr, n, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = f(a[i], b[i]) or f(u[i]) (bits as uint32); e2m1x8 reads a[8i .. 8i+8)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    a = tl.load(a_ptr + i, mask=m, other=0.0)
    b = tl.load(b_ptr + i, mask=m, other=0.0)
    u = tl.load(u_ptr + i, mask=m, other=0)
    if WHICH == 0:
        r = f4t.e2m1_encode(a)
    elif WHICH == 1:
        r = f4t.e4m3_encode(a)
    elif WHICH == 2:
        r = f4t.e2m1_decode(u).to(tl.uint32, bitcast=True)
    elif WHICH == 3:
        r = f4t.e4m3_decode(u).to(tl.uint32, bitcast=True)
    elif WHICH == 4:
        r = f4t.ue8m0_decode(u).to(tl.uint32, bitcast=True)
    elif WHICH == 5:
        r = f4t.nvfp4_global_encode_scale(a).to(tl.uint32, bitcast=True)
    elif WHICH == 6:
        r = f4t.nvfp4_te_exact_scale_code(a, b)
    elif WHICH == 7:
        r = f4t.nvfp4_te_exact_multiplier(a, b).to(tl.uint32, bitcast=True)
    elif WHICH == 8:
        r = f4t.nvfp4_vllm_scale_code(a, b)
    elif WHICH == 9:
        r = f4t.nvfp4_vllm_multiplier(a, b).to(tl.uint32, bitcast=True)
    elif WHICH == 10:
        r = f4t.mxfp4_mx_ocp_scale_code(a)
    elif WHICH == 11:
        r = f4t.mxfp4_mx_ocp_multiplier(a).to(tl.uint32, bitcast=True)
    elif WHICH == 12:
        r = f4t.mxfp4_mx_round_up_scale_code(a)
    elif WHICH == 13:
        r = f4t.mxfp4_mx_round_up_multiplier(a).to(tl.uint32, bitcast=True)
    elif WHICH == 14:
        r = f4t.swiglu(a, b).to(tl.uint32, bitcast=True)
    elif WHICH == 15:
        r = f4t.swiglu_fast(a, b).to(tl.uint32, bitcast=True)
    elif WHICH == 16:
        r = f4t.swiglu_clamped(a, b).to(tl.uint32, bitcast=True)
    elif WHICH == 17:
        r = f4t.swiglu_clamped_fast(a, b).to(tl.uint32, bitcast=True)
    elif WHICH == 18:
        r = f4t.geglu_tanh(a, b).to(tl.uint32, bitcast=True)
    else:
        a0, a1, a2, a3, a4, a5, a6, a7 = f4t.split8(tl.load(a_ptr + 8 * i[:, None] + tl.arange(0, 8)[None, :], mask=m[:, None],
                                                            other=0.0))
        r = f4t.e2m1x8(a0, a1, a2, a3, a4, a5, a6, a7)
    tl.store(out_ptr + i, r.to(tl.uint32), mask=m)


# Gate/up sources of the tile kernels.
INTERLEAVED8 = tl.constexpr(0)
SPLIT_GATE_FIRST = tl.constexpr(1)


@triton.jit
def swiglu_quantize_kernel(gu_ptr, S_ptr, packed_ptr, scale_ptr, row_S_ptr, M, I, GATE_UP: tl.constexpr,
                           ACT: tl.constexpr, FORMAT: tl.constexpr, LAYOUT: tl.constexpr, S_MODE: tl.constexpr,
                           BM: tl.constexpr, BN: tl.constexpr):
    """gate_up [M, 2I] fp32 -> act(gate) * up quantized by the tile helpers, one [BM, BN] output
    tile per program over the padded extent. S_MODE 0: S = *S_ptr; 1: S_r = S_ptr[row] (loaded);
    2: S_r computed from the tile (BN >= I) and written to row_S_ptr."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    r = m0 + tl.arange(0, BM)
    rmask = r < M
    if GATE_UP == 0:
        c = 2 * n0 + tl.arange(0, 2 * BN)
        acc = tl.load(gu_ptr + r.to(tl.int64)[:, None] * (2 * I) + c[None, :], mask=rmask[:, None] & (c < 2 * I)[None, :],
                      other=0.0)
        gate, up = f4t.deinterleave8(acc)
    else:
        c = n0 + tl.arange(0, BN)
        msk = rmask[:, None] & (c < I)[None, :]
        base = gu_ptr + r.to(tl.int64)[:, None] * (2 * I) + c[None, :]
        gate = tl.load(base, mask=msk, other=0.0)
        up = tl.load(base + I, mask=msk, other=0.0)
    h = f4t.activate(gate, up, ACT)
    if S_MODE == 0:
        S = tl.load(S_ptr)
    elif S_MODE == 1:
        S = tl.load(S_ptr + r, mask=rmask, other=1.0)
    else:
        S = f4t.row_encode_scale(h, (n0 + tl.arange(0, BN)) < I)
        tl.store(row_S_ptr + r, S, mask=rmask)
    f4t.store_quantized_dense(h, S, m0, n0, M, I, packed_ptr, scale_ptr, FORMAT, LAYOUT)


@triton.jit
def grouped_swiglu_quantize_kernel(gu_ptr, S_ptr, offsets_ptr, starts_ptr, packed_ptr, scale_ptr, I,
                                   ACT: tl.constexpr, FORMAT: tl.constexpr, PER_EXPERT_S: tl.constexpr,
                                   BM: tl.constexpr, BN: tl.constexpr):
    """Grouped: program (e, band tile t, n) quantizes expert e's rows t*BM .. of gate_up [rows, 2I]
    (interleaved by 8) into the grouped 128x4 layout whose expert start rows are starts_ptr[e]."""
    e = tl.program_id(0)
    r0 = tl.program_id(1) * BM
    n0 = tl.program_id(2) * BN
    off = tl.load(offsets_ptr + e)
    count = tl.load(offsets_ptr + e + 1) - off
    if r0 < (count + 127) // 128 * 128:
        r = r0 + tl.arange(0, BM)
        c = 2 * n0 + tl.arange(0, 2 * BN)
        acc = tl.load(gu_ptr + (off + r).to(tl.int64)[:, None] * (2 * I) + c[None, :],
                      mask=(r < count)[:, None] & (c < 2 * I)[None, :], other=0.0)
        gate, up = f4t.deinterleave8(acc)
        if PER_EXPERT_S:
            S = tl.load(S_ptr + e)
        else:
            S = tl.load(S_ptr)
        f4t.store_quantized_grouped(f4t.activate(gate, up, ACT), S, r0, n0, off, count, tl.load(starts_ptr + e), I,
                                    packed_ptr, scale_ptr, FORMAT)
