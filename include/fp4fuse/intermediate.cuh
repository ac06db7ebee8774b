#pragma once
/// \file intermediate.cuh
/// Whether a gated activation's output act(gate) * up is quantized straight from fp32 or rounded
/// to bfloat16 first. A tag of every entry point that quantizes an activation (`swiglu_quantize`,
/// the fused epilogues).
/// \code
/// using bit_parity_with_bf16_pipelines = fp4fuse::intermediate::bf16;
/// \endcode
#include <cuda_bf16.h>

#include "fp4fuse/config.cuh"

namespace fp4fuse::intermediate {

/// Quantize act(gate) * up straight from fp32 (the default, more accurate).
struct fp32 {
  /// The value quantized for an activation v: v itself.
  /// \code
  /// static_assert(fp4fuse::intermediate::fp32::round(1.00390625f) == 1.00390625f);  // unrounded (bf16::round gives 1.0f)
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr float round(float v) { return v; }
};

/// Round act(gate) * up to bfloat16 (round to nearest even) before quantizing: bit for bit what a
/// BF16 SwiGLU kernel followed by `quantize` produces, as the peers' fused kernels do.
struct bf16 {
  /// The value quantized for an activation v: v rounded to bfloat16 (nearest even) and back, exact.
  /// \code
  /// [[maybe_unused]] const float r = fp4fuse::intermediate::bf16::round(1.00390625f);  // 1.0f: the tie goes to even
  /// \endcode
  FP4FUSE_HOST_DEVICE static float round(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
};

}  // namespace fp4fuse::intermediate
