"""fp4fuse from Triton: the library's device functions (the C ABI, linked from clang bitcode) as
Triton extern functions, and tile-level NVFP4 / MXFP4 epilogue helpers written in Triton over them.

    import fp4fuse.triton_ext as f4t

    @triton.jit
    def epilogue(..., FORMAT: tl.constexpr):
        gate, up = f4t.deinterleave8(acc)          # or two accumulators
        h = f4t.activate(gate, up, f4t.SWIGLU)
        f4t.store_quantized_dense(h, tl.load(S_ptr), m0, n0, M, I, packed_ptr, scale_ptr,
                                  f4t.NVFP4_TE_EXACT, f4t.SWIZZLED_128X4)

    kernel[grid](..., extern_libs=f4t.extern_libs())   # the target's bitcode

Importing checks the Triton version (TESTED_TRITON_VERSIONS) and that the bitcode files exist; each
failure is an ImportError naming what to do. docs/TRITON.md has the whole story.
"""
import triton as _triton

from ._version import TESTED_TRITON_VERSIONS, check_triton_version

check_triton_version(_triton.__version__)

from . import _bitcode  # noqa: E402

_missing = _bitcode.missing_files()
if _missing:
    raise ImportError(f"fp4fuse.triton_ext: the bitcode file(s) {', '.join(_missing)} are missing from "
                      f"{_bitcode.directory()}: build them with `meson compile -C <build> fp4fuse_bitcode` (needs "
                      f"clang with CUDA support) and set FP4FUSE_BITCODE_DIR=<build>/bridges/c_abi, or install a "
                      f"package that ships them")

from ._bitcode import LIB_NAME, bitcode_file, extern_libs  # noqa: E402
from .extern import (e2m1x8, e2m1_encode, e4m3_encode, e2m1_decode, e4m3_decode, ue8m0_decode,  # noqa: E402,F401
                     nvfp4_global_encode_scale, nvfp4_te_exact_scale_code, nvfp4_te_exact_multiplier,
                     nvfp4_vllm_scale_code, nvfp4_vllm_multiplier, mxfp4_mx_ocp_scale_code, mxfp4_mx_ocp_multiplier,
                     mxfp4_mx_round_up_scale_code, mxfp4_mx_round_up_multiplier, swiglu, swiglu_fast, swiglu_clamped,
                     swiglu_clamped_fast, geglu_tanh)
from .tile import (NVFP4_TE_EXACT, NVFP4_VLLM, MXFP4_MX_OCP, MXFP4_MX_ROUND_UP, SWIGLU, SWIGLU_FAST,  # noqa: E402,F401
                   SWIGLU_CLAMPED, SWIGLU_CLAMPED_FAST, GEGLU_TANH, LINEAR, SWIZZLED_128X4, activate, block_size,
                   deinterleave8, quantize_blocks, row_encode_scale, scale_offsets, split8, store_quantized,
                   store_quantized_dense, store_quantized_grouped, swiglu_store_quantized)
