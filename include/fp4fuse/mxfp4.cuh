#pragma once
/// \file mxfp4.cuh
/// `block_codec<format::mxfp4<Recipe>>` (OCP Microscaling): 32 consecutive values -> 16 packed
/// E2M1 bytes + one UE8M0 scale, and the inverse. No tensor scale. The same interface as the NVFP4
/// codec (nvfp4.cuh); the numerics are tabulated in docs/NUMERICS.md ("MXFP4").
///
/// Behaviour: the block amax propagates NaN and Inf; a block containing either gets scale 0xFF
/// (NaN) and every element 0x7 (E2M1 of NaN). An all-zero block gets scale 0x00 (2^-127) and
/// +-0 elements. Element multipliers are exact powers of two, so x * 2^-e rounds only in E2M1.
/// \code
/// const fp4fuse::block_codec<fp4fuse::format::mxfp4<>> codec;  // recipe::mx_ocp
/// float x[32] = {6.0f, -0.5f};                                 // the rest 0
/// fp4fuse::quantized_block<fp4fuse::format::mxfp4<>> b = codec.quantize(x);  // b.scale == 127
/// \endcode
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/detail/block_codec_base.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/recipe.cuh"
#include "fp4fuse/ue8m0.cuh"

namespace fp4fuse {

namespace detail {
/// The exact multiplier 1 / 2^(code - 127) for a finite scale code; NaN for 0xFF.
FP4FUSE_HOST_DEVICE constexpr float mx_multiplier(cuda::std::uint8_t code) {
  if (code == 0xFFu) {
    return bits_float(0x7FC00000u);
  }
  // 2^(127 - code): exponent field 254 - code is >= 1 for code <= 253; code 254 gives 2^-127.
  return code <= 253u ? bits_float(static_cast<cuda::std::uint32_t>(254u - code) << 23) : bits_float(0x00400000u);
}

/// The block-scale formula of an MX recipe (recipe.cuh).
template <class Recipe>
struct mxfp4_recipe;

/// OCP MX: code = clamp(biased_exponent(amax) - 2, 0, 254), i.e. 2^(floor(log2 amax) - 2);
/// NaN or Inf amax -> 0xFF.
template <>
struct mxfp4_recipe<recipe::mx_ocp> {
  FP4FUSE_HOST_DEVICE static block_scale scale_for(float amax) {
    const cuda::std::uint32_t magnitude = float_bits(amax) & 0x7FFFFFFFu;
    const cuda::std::uint32_t exponent = magnitude >> 23;
    const cuda::std::uint8_t code =
        exponent == 0xFFu ? 0xFFu : static_cast<cuda::std::uint8_t>(exponent > 2u ? exponent - 2u : 0u);
    return {code, mx_multiplier(code)};
  }
};

/// Round-up variant: code = ue8m0_rp(amax / 6) (IEEE division), the smallest power of two
/// >= amax / 6; NaN or Inf amax -> 0xFF.
template <>
struct mxfp4_recipe<recipe::mx_round_up> {
  FP4FUSE_HOST_DEVICE static block_scale scale_for(float amax) {
    const cuda::std::uint32_t magnitude = float_bits(amax) & 0x7FFFFFFFu;
    const cuda::std::uint8_t code =
        magnitude >= 0x7F800000u ? 0xFFu : ue8m0_encode(bits_float(magnitude) / 6.0f, ue8m0_rounding::up);
    return {code, mx_multiplier(code)};
  }
};
}  // namespace detail

/// MXFP4 with recipe `Recipe` (`recipe::mx_ocp` or `recipe::mx_round_up`). Stateless; bit-identical
/// on the host and every GPU.
template <class Recipe>
class block_codec<format::mxfp4<Recipe>> : public detail::block_codec_base<block_codec<format::mxfp4<Recipe>>, format::mxfp4<Recipe>> {
 public:
  /// The format.
  using format_type = format::mxfp4<Recipe>;
  /// One quantized block: four words of packed E2M1 and the UE8M0 scale byte.
  using block_type = quantized_block<format_type>;
  /// Elements per block: 32.
  static constexpr int block_size = format_type::block_size;

  /// MXFP4 has no tensor scale; the codec needs no constants (code written for both formats:
  /// `make_block_codec`).
  /// \code
  /// const fp4fuse::block_codec<fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>> codec;  // no constants to compute
  /// \endcode
  FP4FUSE_HOST_DEVICE block_codec() { detail::require_ieee_float_math(); }

  /// Largest magnitude of a block with NaN winning over everything and Inf over finite values (an
  /// integer maximum over the magnitude bits).
  /// \code
  /// float v[32] = {1.0f, cuda::std::numeric_limits<float>::infinity()};  // the rest 0
  /// const float a = fp4fuse::block_codec<fp4fuse::format::mxfp4<>>::block_amax(v);  // +Inf: the block gets scale 0xFF
  /// \endcode
  FP4FUSE_HOST_DEVICE static float block_amax(const float (&x)[block_size]) {
    cuda::std::uint32_t amax = 0;
    FP4FUSE_UNROLL
    for (int i = 0; i < block_size; ++i) {
      const cuda::std::uint32_t m = detail::float_bits(x[i]) & 0x7FFFFFFFu;
      amax = m > amax ? m : amax;
    }
    return detail::bits_float(amax);
  }
  /// Combines two partial amaxes of one block as `block_amax` does (NaN, then Inf, win).
  /// \code
  /// const float a = fp4fuse::block_codec<fp4fuse::format::mxfp4<>>::combine_amax(6.0f, cuda::std::numeric_limits<float>::infinity());  // +Inf
  /// \endcode
  FP4FUSE_HOST_DEVICE static float combine_amax(float a, float b) {
    const cuda::std::uint32_t ma = detail::float_bits(a) & 0x7FFFFFFFu, mb = detail::float_bits(b) & 0x7FFFFFFFu;
    return detail::bits_float(ma > mb ? ma : mb);
  }

  /// The block's UE8M0 byte and the exact multiplier 2^(127 - code) (NaN for 0xFF).
  /// \code
  /// const fp4fuse::block_scale s = fp4fuse::block_codec<fp4fuse::format::mxfp4<>>().scale_for(6.0f);  // 127, 1.0f
  /// \endcode
  FP4FUSE_HOST_DEVICE block_scale scale_for(float block_amax) const { return detail::mxfp4_recipe<Recipe>::scale_for(block_amax); }

  /// Decodes one block: out[i] = e2m1(nibble i) * 2^(scale - 127) (NaN for scale 0xFF). Exact
  /// unless the product is a float subnormal on a flush-to-zero device build.
  /// \code
  /// float v[32] = {6.0f, -0.5f}, out[32];  // the rest 0
  /// const fp4fuse::block_codec<fp4fuse::format::mxfp4<>> codec;
  /// codec.dequantize(codec.quantize(v), out);  // {6, -0.5f, 0, ...}: scale 127 (2^0)
  /// \endcode
  FP4FUSE_HOST_DEVICE void dequantize(const block_type& b, float (&out)[block_size]) const {
    const float scale = scale_value(b.scale);
    FP4FUSE_UNROLL
    for (int i = 0; i < block_size; ++i) {
      out[i] = detail::packed_element(b.packed, i) * scale;
    }
  }

  /// Always 1: MXFP4 has no global scale.
  /// \code
  /// const float alpha = fp4fuse::block_codec<fp4fuse::format::mxfp4<>>().global_decode_scale();  // 1.0f, for code written for both formats
  /// \endcode
  FP4FUSE_HOST_DEVICE float global_decode_scale() const { return 1.0f; }
  /// Decoded block scale: 2^(code - 127), NaN for 0xFF (`ue8m0_decode`).
  /// \code
  /// const float scale = fp4fuse::block_codec<fp4fuse::format::mxfp4<>>::scale_value(130);  // 8.0f
  /// \endcode
  FP4FUSE_HOST_DEVICE static float scale_value(cuda::std::uint8_t code) { return ue8m0_decode(code); }
};

}  // namespace fp4fuse
