"""The C ABI's elementwise functions (bridges/c_abi/fp4fuse_c.h) as Triton `@core.extern` functions.

Each is one `core.extern_elementwise` over the library's bitcode: it takes tensors (or scalars) of
the listed element types, broadcasts them like any Triton elementwise op, and returns one value per
element. The calls are resolved when the kernel is compiled with `extern_libs=fp4fuse.triton_ext.
extern_libs()` (the bitcode for the target); after linking, LLVM inlines them (no `call` remains).

    @triton.jit
    def k(x_ptr, out_ptr):
        i = tl.arange(0, 128)
        x = tl.load(x_ptr + i)
        tl.store(out_ptr + i, fp4fuse.triton_ext.e4m3_decode(fp4fuse.triton_ext.e4m3_encode(x)))
"""
from triton.language import core

from ._bitcode import LIB_NAME, lib_path

_f32 = core.dtype("fp32")
_u32 = core.dtype("uint32")
_i32 = core.dtype("int32")


def _call(symbol, args, arg_types, ret, _semantic):
    # The ABI's integer arguments are uint32_t; int32 tensors (tl.arange, loads of int32) are
    # accepted with the same bits.
    table = {tuple(arg_types): (symbol, ret)}
    if _u32 in arg_types:
        table[tuple(_i32 if t == _u32 else t for t in arg_types)] = (symbol, ret)
    return core.extern_elementwise(LIB_NAME, lib_path(), list(args), table, is_pure=True, _semantic=_semantic)


# ---- E2M1, E4M3, UE8M0 ---------------------------------------------------------------------------
@core.extern
def e2m1x8(a0, a1, a2, a3, a4, a5, a6, a7, _semantic=None):
    """8 already-scaled fp32 values -> one uint32 word, value i in bits 4i+3..4i
    (fp4fuse::e2m1x8_encode: round to nearest even, saturating to +-6, -0 keeps its sign, NaN -> 0x7)."""
    return _call("fp4fuse_e2m1x8", [a0, a1, a2, a3, a4, a5, a6, a7], [_f32] * 8, _u32, _semantic)


@core.extern
def e2m1_encode(x, _semantic=None):
    """fp32 -> E2M1 nibble in bits 3..0 (fp4fuse::e2m1_encode)."""
    return _call("fp4fuse_e2m1_encode", [x], [_f32], _u32, _semantic)


@core.extern
def e4m3_encode(x, _semantic=None):
    """fp32 -> E4M3 byte, round to nearest even, satfinite (fp4fuse::e4m3_encode)."""
    return _call("fp4fuse_e4m3_encode", [x], [_f32], _u32, _semantic)


@core.extern
def e2m1_decode(nibble, _semantic=None):
    """E2M1 nibble (bits 3..0) -> fp32, exact; 0x8 -> -0."""
    return _call("fp4fuse_e2m1_decode", [nibble], [_u32], _f32, _semantic)


@core.extern
def e4m3_decode(byte, _semantic=None):
    """E4M3 byte (bits 7..0) -> fp32, exact; 0x7F/0xFF -> NaN."""
    return _call("fp4fuse_e4m3_decode", [byte], [_u32], _f32, _semantic)


@core.extern
def ue8m0_decode(byte, _semantic=None):
    """UE8M0 byte -> 2^(byte - 127) as fp32; 0xFF -> NaN."""
    return _call("fp4fuse_ue8m0_decode", [byte], [_u32], _f32, _semantic)


# ---- scales -------------------------------------------------------------------------------------
@core.extern
def nvfp4_global_encode_scale(amax, _semantic=None):
    """S = 2688 / |amax| (IEEE); 1.0 for 0, Inf, NaN; FLT_MAX on overflow (fp4fuse::nvfp4_global_encode_scale)."""
    return _call("fp4fuse_nvfp4_global_encode_scale", [amax], [_f32], _f32, _semantic)


@core.extern
def nvfp4_te_exact_scale_code(block_amax, S, _semantic=None):
    """E4M3 byte of block_codec<nvfp4<te_exact>>(S).scale_for(block_amax): e4m3(amax * (S * (1/6)))."""
    return _call("fp4fuse_nvfp4_te_exact_scale_code", [block_amax, S], [_f32, _f32], _u32, _semantic)


@core.extern
def nvfp4_te_exact_multiplier(block_amax, S, _semantic=None):
    """Element multiplier of the same: min(1 / (sf * (1/S)), FLT_MAX)."""
    return _call("fp4fuse_nvfp4_te_exact_multiplier", [block_amax, S], [_f32, _f32], _f32, _semantic)


@core.extern
def nvfp4_vllm_scale_code(block_amax, S, _semantic=None):
    """E4M3 byte of block_codec<nvfp4<vllm>>(S).scale_for(block_amax): e4m3(S * (amax * rcp(6)))."""
    return _call("fp4fuse_nvfp4_vllm_scale_code", [block_amax, S], [_f32, _f32], _u32, _semantic)


@core.extern
def nvfp4_vllm_multiplier(block_amax, S, _semantic=None):
    """Element multiplier of the same: sf == 0 ? 0 : rcp.approx.ftz(sf * rcp.approx.ftz(S))."""
    return _call("fp4fuse_nvfp4_vllm_multiplier", [block_amax, S], [_f32, _f32], _f32, _semantic)


@core.extern
def mxfp4_mx_ocp_scale_code(block_amax, _semantic=None):
    """UE8M0 byte of block_codec<mxfp4<mx_ocp>>.scale_for(block_amax): 2^(floor(log2 amax) - 2); NaN/Inf -> 0xFF."""
    return _call("fp4fuse_mxfp4_mx_ocp_scale_code", [block_amax], [_f32], _u32, _semantic)


@core.extern
def mxfp4_mx_ocp_multiplier(block_amax, _semantic=None):
    """Element multiplier of the same: 2^(127 - code), exact (NaN for 0xFF)."""
    return _call("fp4fuse_mxfp4_mx_ocp_multiplier", [block_amax], [_f32], _f32, _semantic)


@core.extern
def mxfp4_mx_round_up_scale_code(block_amax, _semantic=None):
    """UE8M0 byte of block_codec<mxfp4<mx_round_up>>.scale_for(block_amax): ue8m0_rp(amax / 6)."""
    return _call("fp4fuse_mxfp4_mx_round_up_scale_code", [block_amax], [_f32], _u32, _semantic)


@core.extern
def mxfp4_mx_round_up_multiplier(block_amax, _semantic=None):
    """Element multiplier of the same: 2^(127 - code), exact (NaN for 0xFF)."""
    return _call("fp4fuse_mxfp4_mx_round_up_multiplier", [block_amax], [_f32], _f32, _semantic)


# ---- gated activations --------------------------------------------------------------------------
@core.extern
def swiglu(gate, up, _semantic=None):
    """(gate / (1 + exp(-gate))) * up in fp32, the library's portable exp (fp4fuse::activation::swiglu)."""
    return _call("fp4fuse_swiglu", [gate, up], [_f32, _f32], _f32, _semantic)


@core.extern
def swiglu_fast(gate, up, _semantic=None):
    """silu with ex2.approx.ftz and rcp.approx.ftz, times up (fp4fuse::activation::swiglu_fast)."""
    return _call("fp4fuse_swiglu_fast", [gate, up], [_f32, _f32], _f32, _semantic)


@core.extern
def swiglu_clamped(gate, up, _semantic=None):
    """GPT-OSS: g = min(gate, 7), u = clamp(up, -7, 7), (g * sigmoid(1.702 g)) * (u + 1) (activation::swiglu_clamped)."""
    return _call("fp4fuse_swiglu_clamped", [gate, up], [_f32, _f32], _f32, _semantic)


@core.extern
def swiglu_clamped_fast(gate, up, _semantic=None):
    """The same with the hardware exp and reciprocal (activation::swiglu_clamped_fast)."""
    return _call("fp4fuse_swiglu_clamped_fast", [gate, up], [_f32, _f32], _f32, _semantic)


@core.extern
def geglu_tanh(gate, up, _semantic=None):
    """gelu_tanh(gate) * up in fp32 (fp4fuse::activation::geglu_tanh)."""
    return _call("fp4fuse_geglu_tanh", [gate, up], [_f32, _f32], _f32, _semantic)
