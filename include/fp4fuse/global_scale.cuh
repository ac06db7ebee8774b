#pragma once
/// \file global_scale.cuh
/// NVFP4's per-tensor FP32 scale: S = 448 * 6 / tensor_amax maps the tensor's largest magnitude
/// onto the largest E4M3 block scale times the largest E2M1 value.
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

#include <cuda/std/limits>

namespace fp4fuse {

/// E4M3's largest finite value.
inline constexpr float e4m3_max = 448.0f;
/// E2M1's largest value.
inline constexpr float e2m1_max = 6.0f;

/// The global encode scale S = 2688 / tensor_amax (IEEE division, rounded to nearest).
///
/// Defined cases: amax of 0, +-Inf or NaN (nothing sensible to scale to) -> 1.0; an amax so small
/// that the quotient overflows -> FLT_MAX; the sign of amax is ignored. This is
/// TransformerEngine's convention for 0 and Inf; NaN is documented here because TE leaves it to
/// fminf.
/// \code
/// float S = fp4fuse::nvfp4_global_encode_scale(tensor_amax);  // pass S to block_codec<format::nvfp4<>>
/// float alpha = fp4fuse::nvfp4_global_decode_scale(S);      // the next GEMM's alpha factor
/// \endcode
FP4FUSE_HOST_DEVICE constexpr float nvfp4_global_encode_scale(float tensor_amax) {
  const float amax = detail::abs_float(tensor_amax);
  if (!(amax > 0.0f) || amax == cuda::std::numeric_limits<float>::infinity()) {
    return 1.0f;
  }
  const float scale = (e4m3_max * e2m1_max) / amax;
  return scale > cuda::std::numeric_limits<float>::max() ? cuda::std::numeric_limits<float>::max() : scale;
}

/// The decode scale 1/S (IEEE division), the factor a consumer applies after multiplying
/// E2M1 values by their E4M3 block scales (the next GEMM's alpha).
FP4FUSE_HOST_DEVICE constexpr float nvfp4_global_decode_scale(float global_encode_scale) {
  return 1.0f / global_encode_scale;
}

/// How the standalone quantizers (`quantize`, `swiglu_quantize`) get NVFP4's global encode scale:
/// their `const float*` overloads read one S for the whole tensor from device memory (per tensor);
/// `global_scale::per_row` has them compute one per row (token) in the same kernel and write it out.
namespace global_scale {
/// One S per row (token), an output: S_r = nvfp4_global_encode_scale(max |x| over row r, NaN
/// ignored), so a row of zeros or one holding an Inf gets S_r = 1, exactly as a tensor would;
/// written to `encode_scales[r]` ([M] floats, device memory, 4-byte aligned) for the next GEMM
/// (whose alpha for row r is 1 / S_r), and row r's blocks quantized with block_codec(S_r). The
/// kernels keep the row on chip (one CTA per row, one pass over the input) where it fits one CTA;
/// longer rows take two passes (row amax, then the blocks: the input is read twice), with the same
/// bits. NVFP4 only (MXFP4 fails to compile).
/// Name the type at the call: a bare `{d_row_S}` would convert to the `const float*` overload (a
/// standard conversion beats the aggregate's), so the launchers refuse braced scales at compile time.
/// \code
/// float* d_row_S = nullptr;  // M floats in device memory
/// const fp4fuse::global_scale::per_row row_scales{d_row_S};
/// \endcode
struct per_row {
  /// [M] floats in device memory: S of each row, written by the kernel.
  float* encode_scales;
};
}  // namespace global_scale

}  // namespace fp4fuse
