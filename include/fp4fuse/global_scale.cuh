#pragma once
/// \file global_scale.cuh
/// NVFP4's FP32 global scale S = 448 * 6 / amax, which maps the largest magnitude of a tensor (or
/// of a row, or of a group) onto the largest E4M3 block scale times the largest E2M1 value, and
/// the descriptors that tell a launcher where S lives (`global_scale::per_tensor`, `per_row`,
/// `per_group`) or that the format has none (`global_scale::none`, MXFP4).
///
/// Every launcher takes its arguments in one order: inputs, outputs, the global-scale descriptor,
/// options (the activation, the NaN policy), the stream. The descriptor's type selects the
/// implementation at compile time; a format and a descriptor that do not fit (NVFP4 with `none`,
/// MXFP4 with a scale) fail to compile with a sentence.
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/e4m3.cuh"

#include <cuda/std/limits>
#include <cuda/std/type_traits>

namespace fp4fuse {

/// The global encode scale S = 2688 / amax (IEEE division, rounded to nearest).
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
/// \code
/// static_assert(fp4fuse::nvfp4_global_decode_scale(fp4fuse::nvfp4_global_encode_scale(6.0f)) == 1.0f / 448.0f);
/// \endcode
FP4FUSE_HOST_DEVICE constexpr float nvfp4_global_decode_scale(float global_encode_scale) {
  return 1.0f / global_encode_scale;
}

/// Where a launcher finds (or puts) NVFP4's global encode scale. Name the type at the call
/// (`global_scale::per_tensor{d_S}`): the launchers deduce the kind from it, so a bare `{d_S}` or
/// a raw pointer does not compile.
namespace global_scale {

/// No global scale: MXFP4, whose block scales are powers of two on their own.
/// \code
/// const fp4fuse::global_scale::none no_scale{};
/// \endcode
struct none {};

/// One S for the whole tensor, one float in device memory (4-byte aligned). The quantizers and
/// `dequantize` read it in the kernel (so the launch can be captured in a CUDA graph after the
/// `amax` that writes it); `amax` writes it.
/// \code
/// float* d_S = nullptr;  // one float in device memory
/// const fp4fuse::global_scale::per_tensor S{d_S};
/// \endcode
struct per_tensor {
  /// S in device memory.
  const float* encode_scale;
};

/// One S per row (token), an output: S_r = nvfp4_global_encode_scale(max |x| over row r, NaN
/// ignored), so a row of zeros or one holding an Inf gets S_r = 1, exactly as a tensor would;
/// written to `encode_scales[r]` ([M] floats, device memory, 4-byte aligned) for the next GEMM
/// (whose alpha for row r is 1 / S_r), and row r's blocks quantized with block_codec(S_r). The
/// quantizers keep the row on chip (one CTA per row, one pass over the input) where it fits one
/// CTA; longer rows take two passes (row amax, then the blocks: the input is read twice), with the
/// same bits. The row lengths that take one pass: docs/NUMERICS.md, "Per-row global scales".
/// \code
/// float* d_row_S = nullptr;  // M floats in device memory
/// const fp4fuse::global_scale::per_row row_scales{d_row_S};
/// \endcode
struct per_row {
  /// [M] floats in device memory: S of each row, written by the kernel.
  float* encode_scales;
};

/// One S per group of rows (an expert of a grouped MoE layer), an input: group g's rows are
/// quantized with `encode_scales[g]` ([groups] floats, device memory, 4-byte aligned). Taken by
/// grouped launchers, which know the groups from their layout.
/// \code
/// const float* d_expert_S = nullptr;  // E floats in device memory
/// const fp4fuse::global_scale::per_group expert_scales{d_expert_S};
/// \endcode
struct per_group {
  /// [groups] floats in device memory: S of each group.
  const float* encode_scales;
};

/// True for the four descriptor types.
template <class T>
inline constexpr bool is_descriptor = cuda::std::is_same_v<T, none> || cuda::std::is_same_v<T, per_tensor> ||
                                      cuda::std::is_same_v<T, per_row> || cuda::std::is_same_v<T, per_group>;

}  // namespace global_scale

namespace detail {

/// What a launcher's scale parameter defaults to, so that a braced `{ptr}` (a non-deduced
/// argument) reaches the launcher's static_assert and its sentence instead of an overload error.
struct unnamed_global_scale {
  const void* pointer;
};

/// The compile-time checks every launcher makes of its format and descriptor (true when they
/// fit, so that a launcher can `static_assert` on it and add its own checks of the kinds it takes).
template <class Format, class Scale>
constexpr bool fits_global_scale() {
  static_assert(global_scale::is_descriptor<Scale>,
                "fp4fuse: the global scale must be a descriptor: global_scale::per_tensor{d_S} or global_scale::per_row{d_row_S} for "
                "NVFP4, global_scale::none{} for MXFP4 (a raw pointer or a braced {ptr} does not say which)");
  static_assert(!global_scale::is_descriptor<Scale> || !Format::has_global_scale || !cuda::std::is_same_v<Scale, global_scale::none>,
                "fp4fuse: NVFP4 needs a global scale: pass global_scale::per_tensor{d_S} or global_scale::per_row{d_row_S}, not "
                "global_scale::none");
  static_assert(!global_scale::is_descriptor<Scale> || Format::has_global_scale || cuda::std::is_same_v<Scale, global_scale::none>,
                "fp4fuse: MXFP4 has no global scale: pass global_scale::none{}");
  return true;
}

/// The pointer a kernel reads S from: per_tensor's S, per_row's S_r (read back by a second pass),
/// nullptr for none.
FP4FUSE_HOST_DEVICE constexpr const float* scale_pointer(global_scale::none) { return nullptr; }
FP4FUSE_HOST_DEVICE constexpr const float* scale_pointer(global_scale::per_tensor s) { return s.encode_scale; }
FP4FUSE_HOST_DEVICE constexpr const float* scale_pointer(global_scale::per_row s) { return s.encode_scales; }
FP4FUSE_HOST_DEVICE constexpr const float* scale_pointer(global_scale::per_group s) { return s.encode_scales; }

}  // namespace detail

}  // namespace fp4fuse
