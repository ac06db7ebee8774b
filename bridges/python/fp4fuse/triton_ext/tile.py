"""Tile-level quantization in Triton over the C ABI: a [BM, BN] fp32 tile (or its gate and up
tiles) -> NVFP4 / MXFP4 packed words + block scales, stored in the linear, 128x4 swizzled or
grouped (per-expert 128x4 swizzled) scale layout of include/fp4fuse/scale_layout.cuh.

Every helper is `@triton.jit` and is called from a user kernel's epilogue; the numerics are the
library's, bit for bit: the block amax (NVFP4: NaN ignored; MXFP4: NaN and Inf win), the scale
code and multiplier from `block_codec<F>::scale_for` (C ABI), x * multiplier rounded once
(`mul.rn.f32`, never contracted), and `e2m1x8_encode` (C ABI). The activation is the library's
`Activation::apply` (C ABI), in fp32 (`intermediate::fp32`).

Constants (tl.constexpr arguments):
  FORMAT: NVFP4_TE_EXACT, NVFP4_VLLM, MXFP4_MX_OCP, MXFP4_MX_ROUND_UP (block size 16 / 32)
  ACT:    SWIGLU, SWIGLU_FAST, SWIGLU_CLAMPED, SWIGLU_CLAMPED_FAST, GEGLU_TANH
  LAYOUT: LINEAR ([rows][scale_cols]), SWIZZLED_128X4 (also each expert block of a grouped layout)

Global scale S (NVFP4; ignored for MXFP4): a scalar (per tensor, or the tile's expert's S for
per-expert scales) or a [BM] tensor (one S per row: loaded, or computed with `row_encode_scale`
when the tile spans whole rows).
"""
import triton
import triton.language as tl

from . import extern as x

NVFP4_TE_EXACT = tl.constexpr(0)
NVFP4_VLLM = tl.constexpr(1)
MXFP4_MX_OCP = tl.constexpr(2)
MXFP4_MX_ROUND_UP = tl.constexpr(3)

SWIGLU = tl.constexpr(0)
SWIGLU_FAST = tl.constexpr(1)
SWIGLU_CLAMPED = tl.constexpr(2)
SWIGLU_CLAMPED_FAST = tl.constexpr(3)
GEGLU_TANH = tl.constexpr(4)

LINEAR = tl.constexpr(0)
SWIZZLED_128X4 = tl.constexpr(1)


def block_size(fmt: int) -> int:
    """Elements per scale block of a FORMAT constant: 16 (NVFP4) or 32 (MXFP4)."""
    return 16 if int(fmt) in (0, 1) else 32


@triton.jit
def activate(gate, up, ACT: tl.constexpr):
    """act(gate) * up in fp32 with the library's activation `ACT` (elementwise, any shape)."""
    tl.static_assert(ACT >= 0 and ACT <= 4, "fp4fuse.triton_ext.activate: ACT must be SWIGLU, SWIGLU_FAST, SWIGLU_CLAMPED, SWIGLU_CLAMPED_FAST or GEGLU_TANH")
    if ACT == 0:
        h = x.swiglu(gate, up)
    elif ACT == 1:
        h = x.swiglu_fast(gate, up)
    elif ACT == 2:
        h = x.swiglu_clamped(gate, up)
    elif ACT == 3:
        h = x.swiglu_clamped_fast(gate, up)
    else:
        h = x.geglu_tanh(gate, up)
    return h


@triton.jit
def deinterleave8(acc):
    """Splits a [BM, 2BN] tile whose columns are gate/up granules of 8 (gate_up::interleaved<8>:
    [g0..g7, u0..u7, g8..g15, ...]) into its gate and up tiles, [BM, BN] each."""
    BM: tl.constexpr = acc.shape[0]
    BN: tl.constexpr = acc.shape[1] // 2
    tl.static_assert(acc.shape[1] % 16 == 0, "fp4fuse.triton_ext.deinterleave8: the tile holds whole granule pairs (2BN a multiple of 16)")
    a = tl.reshape(acc, [BM, BN // 8, 2, 8])
    a = tl.permute(a, [0, 1, 3, 2])
    gate, up = tl.split(a)
    return tl.reshape(gate, [BM, BN]), tl.reshape(up, [BM, BN])


@triton.jit
def split8(v):
    """The eight elements of the last axis (of length 8) of v as eight tensors of v's other axes,
    element 0 first: the operands of the C ABI's 8-value functions (`e2m1x8`)."""
    tl.static_assert(v.shape[len(v.shape) - 1] == 8, "fp4fuse.triton_ext.split8: the last axis must have 8 elements")
    # tl.split peels a last axis of 2: with the 8 as [2, 2, 2], element i = 4 b2 + 2 b1 + b0 comes
    # out of the third split first (b0), then the second (b1), then the first (b2).
    e0, e1 = tl.split(tl.reshape(v, v.shape[:-1] + [2, 2, 2]))
    e00, e01 = tl.split(e0)
    e10, e11 = tl.split(e1)
    a0, a4 = tl.split(e00)
    a2, a6 = tl.split(e01)
    a1, a5 = tl.split(e10)
    a3, a7 = tl.split(e11)
    return a0, a1, a2, a3, a4, a5, a6, a7


@triton.jit
def _mul_rn(a, b):
    # One IEEE product, never fused into an fma and never flushed (the codec's x * multiplier).
    return tl.inline_asm_elementwise("mul.rn.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.float32, is_pure=True,
                                     pack=1)


@triton.jit
def _magnitude_bits(v, IGNORE_NAN: tl.constexpr):
    bits = v.to(tl.uint32, bitcast=True) & 0x7FFFFFFF
    if IGNORE_NAN:
        bits = tl.where(bits > 0x7F800000, 0, bits)
    return bits


@triton.jit
def row_encode_scale(h, col_mask):
    """Per-row NVFP4 global encode scales of a tile that spans whole rows: S_r =
    nvfp4_global_encode_scale(max |h| over the row's columns where `col_mask` ([BN] bool) holds,
    NaN ignored), [BM] fp32: what `global_scale::per_row` computes and writes."""
    bits = tl.where(col_mask[None, :], _magnitude_bits(h, True), 0)
    amax = tl.max(bits, axis=1).to(tl.float32, bitcast=True)
    return x.nvfp4_global_encode_scale(amax)


@triton.jit
def _scale_for(amax, S, FORMAT: tl.constexpr):
    if FORMAT == 0:
        code = x.nvfp4_te_exact_scale_code(amax, S)
        mult = x.nvfp4_te_exact_multiplier(amax, S)
    elif FORMAT == 1:
        code = x.nvfp4_vllm_scale_code(amax, S)
        mult = x.nvfp4_vllm_multiplier(amax, S)
    elif FORMAT == 2:
        code = x.mxfp4_mx_ocp_scale_code(amax)
        mult = x.mxfp4_mx_ocp_multiplier(amax)
    else:
        code = x.mxfp4_mx_round_up_scale_code(amax)
        mult = x.mxfp4_mx_round_up_multiplier(amax)
    return code, mult


@triton.jit
def quantize_blocks(h, S, FORMAT: tl.constexpr):
    """Quantizes a [BM, BN] fp32 tile (BN a multiple of the block size) block by block along the
    columns, as block_codec<FORMAT>(S).quantize: returns (words [BM, BN/8] uint32, element i of a
    word in bits 4i+3..4i; codes [BM, BN/B] uint32, the scale bytes). S: scalar or [BM]."""
    BM: tl.constexpr = h.shape[0]
    BN: tl.constexpr = h.shape[1]
    B: tl.constexpr = 16 if FORMAT <= 1 else 32
    tl.static_assert(BN % B == 0, "fp4fuse.triton_ext: the tile width BN must be a multiple of the block size (16 NVFP4, 32 MXFP4)")
    tl.static_assert(FORMAT >= 0 and FORMAT <= 3, "fp4fuse.triton_ext: FORMAT must be NVFP4_TE_EXACT, NVFP4_VLLM, MXFP4_MX_OCP or MXFP4_MX_ROUND_UP")
    h3 = tl.reshape(h, [BM, BN // B, B])
    amax = tl.max(_magnitude_bits(h3, FORMAT <= 1), axis=2).to(tl.float32, bitcast=True)
    if len(S.shape) == 1:
        S2 = tl.broadcast_to(S[:, None], [BM, BN // B])
    else:
        S2 = S
    code, mult = _scale_for(amax, S2, FORMAT)
    y = _mul_rn(h3, mult[:, :, None])
    a0, a1, a2, a3, a4, a5, a6, a7 = split8(tl.reshape(y, [BM, BN // 8, 8]))
    words = x.e2m1x8(a0, a1, a2, a3, a4, a5, a6, a7)
    return words, code


@triton.jit
def scale_offsets(srows, k, scale_ld, LAYOUT: tl.constexpr):
    """Byte offsets [BM, BK] of scales (srows [BM], scale columns k [BK]). LINEAR: srows * scale_ld + k.
    SWIZZLED_128X4 with scale_ld = K' (padded scale columns): the 128x4 swizzle, (m/128)(K'/4)512 +
    (k/4)512 + (m%32)16 + ((m%128)/32)4 + k%4; for a grouped layout srows = the expert's start row
    (a multiple of 128) + the row within the expert."""
    tl.static_assert(LAYOUT == 0 or LAYOUT == 1, "fp4fuse.triton_ext: LAYOUT must be LINEAR or SWIZZLED_128X4")
    m = srows.to(tl.int64)[:, None]
    kk = k.to(tl.int64)[None, :]
    if LAYOUT == 0:
        off = m * scale_ld + kk
    else:
        off = (m // 128) * (scale_ld // 4) * 512 + (m % 32) * 16 + ((m % 128) // 32) * 4 + (kk // 4) * 512 + (kk % 4)
    return off


@triton.jit
def store_quantized(h, S, rows, row_mask, n0, I, packed_ptr, packed_ld, scale_ptr, srows, srow_mask, scale_ld,
                    padded_cols, FORMAT: tl.constexpr, LAYOUT: tl.constexpr):
    """Quantizes the [BM, BN] fp32 tile h (output columns n0 .. n0 + BN) and stores it.

    Packed: the words of row rows[i] (where row_mask[i]) and columns below I at byte
    rows[i] * packed_ld + col / 2 (packed_ld: bytes per row, a multiple of 4).
    Scales: at scale-tensor rows srows[i] (where srow_mask[i]), scale columns k = n0/B + j below
    padded_cols, with scale_offsets(LAYOUT, scale_ld); positions whose row is not a real row
    (row_mask false) or whose column is >= I/B are padding and get 0x00. Give srow_mask true
    beyond row_mask (up to the padded rows) where the tile should also write padding rows.
    S: scalar or [BM] (NVFP4; ignored for MXFP4). n0 a multiple of BN, BN of the block size.
    """
    BM: tl.constexpr = h.shape[0]
    BN: tl.constexpr = h.shape[1]
    B: tl.constexpr = 16 if FORMAT <= 1 else 32
    words, code = quantize_blocks(h, S, FORMAT)
    w = tl.arange(0, BN // 8)
    wcol = n0 // 8 + w
    wptr = packed_ptr.to(tl.pointer_type(tl.uint32)) + rows.to(tl.int64)[:, None] * (packed_ld // 4) + wcol[None, :]
    tl.store(wptr, words, mask=row_mask[:, None] & (wcol * 8 < I)[None, :])
    k = n0 // B + tl.arange(0, BN // B)
    real = row_mask[:, None] & (k * B < I)[None, :]
    byte = tl.where(real, code, 0).to(tl.uint8)
    sptr = scale_ptr.to(tl.pointer_type(tl.uint8)) + scale_offsets(srows, k, scale_ld, LAYOUT)
    tl.store(sptr, byte, mask=srow_mask[:, None] & (k < padded_cols)[None, :])


@triton.jit
def swiglu_store_quantized(gate, up, S, rows, row_mask, n0, I, packed_ptr, packed_ld, scale_ptr, srows, srow_mask,
                           scale_ld, padded_cols, ACT: tl.constexpr, FORMAT: tl.constexpr, LAYOUT: tl.constexpr):
    """act(gate) * up of two [BM, BN] fp32 tiles (gate_up::separate), quantized and stored as
    `store_quantized`."""
    store_quantized(activate(gate, up, ACT), S, rows, row_mask, n0, I, packed_ptr, packed_ld, scale_ptr, srows,
                    srow_mask, scale_ld, padded_cols, FORMAT, LAYOUT)


@triton.jit
def store_quantized_dense(h, S, m0, n0, M, I, packed_ptr, scale_ptr, FORMAT: tl.constexpr, LAYOUT: tl.constexpr):
    """`store_quantized` for one dense [M, I] matrix: packed [M, I/2] bytes (row-major, no gaps),
    scales [M][I/B] (LINEAR) or [round_up(M,128)/128][K'/4][512] (SWIZZLED_128X4, K' =
    round_up(I/B, 4)). I a multiple of the block size B (16 NVFP4, 32 MXFP4). Tiles at (m0, n0); a
    grid covering the padded extent (round_up(M, 128) rows, K' B columns for the swizzled layout)
    writes every padding byte too."""
    tl.static_assert(LAYOUT == 0 or LAYOUT == 1, "fp4fuse.triton_ext: LAYOUT must be LINEAR or SWIZZLED_128X4")
    BM: tl.constexpr = h.shape[0]
    B: tl.constexpr = 16 if FORMAT <= 1 else 32
    rows = m0 + tl.arange(0, BM)
    scale_cols = I // B
    if LAYOUT == 0:
        padded_rows = M
        padded_cols = scale_cols
        scale_ld = scale_cols
    else:
        padded_rows = (M + 127) // 128 * 128
        padded_cols = (scale_cols + 3) // 4 * 4
        scale_ld = padded_cols
    store_quantized(h, S, rows, rows < M, n0, I, packed_ptr, I // 2, scale_ptr, rows, rows < padded_rows, scale_ld,
                    padded_cols, FORMAT, LAYOUT)


@triton.jit
def store_quantized_grouped(h, S, r0, n0, expert_offset, expert_count, expert_start_row, I, packed_ptr, scale_ptr,
                            FORMAT: tl.constexpr):
    """`store_quantized` for one expert of a grouped (MoE) activation: the tile holds the expert's
    rows r0 .. r0 + BM (r0 counted within the expert), token rows expert_offset + r at packed
    [rows, I/2], scales in the grouped 128x4 layout (scale_layout::grouped_swizzled_128x4): the
    expert's block starts at scale row expert_start_row (a multiple of 128, from the layout's
    ExpertStart convention); rows from expert_count up to the band's end are padding (0x00).
    Gaps between experts and the tail belong to no expert: clear them (or the whole tensor) first."""
    BM: tl.constexpr = h.shape[0]
    B: tl.constexpr = 16 if FORMAT <= 1 else 32
    r = r0 + tl.arange(0, BM)
    padded_cols = (I // B + 3) // 4 * 4
    store_quantized(h, S, expert_offset + r, r < expert_count, n0, I, packed_ptr, I // 2, scale_ptr,
                    expert_start_row + r, r < (expert_count + 127) // 128 * 128, padded_cols, padded_cols, FORMAT,
                    SWIZZLED_128X4)
