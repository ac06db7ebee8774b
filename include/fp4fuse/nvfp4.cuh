#pragma once
/// \file nvfp4.cuh
/// `block_codec<format::nvfp4<Recipe>>`: 16 consecutive values -> 8 packed E2M1 bytes + one E4M3
/// scale, given the tensor's global encode scale S (global_scale.cuh), and the inverse. The
/// recipes' formulas and the behaviour on zero, underflowing, NaN and Inf blocks are tabulated
/// once, in docs/NUMERICS.md ("NVFP4 block recipes").
///
/// The codec is built once per thread from S (it precomputes the per-tensor constants). Its
/// pieces are public so that an epilogue can reduce a block's amax across lanes itself:
/// \code
/// const fp4fuse::block_codec<fp4fuse::format::nvfp4<>> codec(S);  // recipe::te_exact
/// float amax = codec.block_amax(x);                               // or a reduction with combine_amax
/// fp4fuse::block_scale s = codec.scale_for(amax);                 // E4M3 byte + element multiplier
/// fp4fuse::quantized_block<fp4fuse::format::nvfp4<>> b = codec.encode(x, s);  // == codec.quantize(x)
/// \endcode
#include <cuda/std/limits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/detail/block_codec_base.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/e4m3.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/recipe.cuh"

namespace fp4fuse {

namespace detail {
/// The per-tensor constants and the block-scale formula of an NVFP4 recipe (recipe.cuh).
template <class Recipe>
struct nvfp4_recipe;

/// TransformerEngine: code = e4m3(amax * (S * (1/6))); multiplier = min(1 / (sf * (1/S)), FLT_MAX).
template <>
struct nvfp4_recipe<recipe::te_exact> {
  float decode_scale;  // 1/S, IEEE
  float scale_over_6;  // S * (1/6)
  FP4FUSE_HOST_DEVICE explicit nvfp4_recipe(float S) : decode_scale(1.0f / S), scale_over_6(S * (1.0f / 6.0f)) {}
  FP4FUSE_HOST_DEVICE block_scale scale_for(float amax) const {
    const cuda::std::uint8_t code = e4m3_encode(amax * scale_over_6);
    const float multiplier = min_num(1.0f / (e4m3_decode(code) * decode_scale), cuda::std::numeric_limits<float>::max());
    return {code, multiplier};
  }
};

/// vLLM: code = e4m3(S * (amax * rcp(6))); multiplier = sf == 0 ? 0 : rcp(sf * rcp(S)).
template <>
struct nvfp4_recipe<recipe::vllm> {
  float decode_scale;      // 1/S, IEEE (the decode factor; vLLM's own math uses rcp(S))
  float encode_scale;      // S
  float decode_scale_rcp;  // rcp(S)
  FP4FUSE_HOST_DEVICE explicit nvfp4_recipe(float S)
      : decode_scale(1.0f / S), encode_scale(S), decode_scale_rcp(rcp_approx_ftz(S)) {}
  FP4FUSE_HOST_DEVICE block_scale scale_for(float amax) const {
    const cuda::std::uint8_t code = e4m3_encode(encode_scale * (amax * rcp_approx_ftz(6.0f)));
    const float sf = e4m3_decode(code);
    const float multiplier = sf != 0.0f ? rcp_approx_ftz(sf * decode_scale_rcp) : 0.0f;
    return {code, multiplier};
  }
};
}  // namespace detail

/// NVFP4 with recipe `Recipe` (`recipe::te_exact` or `recipe::vllm`). Numerics: docs/NUMERICS.md;
/// te_exact is bit-identical on the host and every GPU; vllm's multiplier can differ by up to 3 ulp
/// of `rcp.approx` between host and device (the scale byte never does). `encode` and `quantize`
/// come from the base shared with MXFP4:
/// \code
/// float x[16] = {0.1f, -0.7f, 2.5f, 6.0f};  // the rest 0
/// const auto b = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(448.0f).quantize(x);  // b.scale == 0x7E
/// \endcode
template <class Recipe>
class block_codec<format::nvfp4<Recipe>> : public detail::block_codec_base<block_codec<format::nvfp4<Recipe>>, format::nvfp4<Recipe>> {
 public:
  /// The format.
  using format_type = format::nvfp4<Recipe>;
  /// One quantized block: two words of packed E2M1 and the E4M3 scale byte.
  using block_type = quantized_block<format_type>;
  /// Elements per block: 16.
  static constexpr int block_size = format_type::block_size;

  /// Precomputes the recipe's per-tensor constants from S.
  /// \param global_encode_scale S, finite and positive (`nvfp4_global_encode_scale` gives one).
  /// \code
  /// const fp4fuse::block_codec<fp4fuse::format::nvfp4<>> codec(fp4fuse::nvfp4_global_encode_scale(amax));
  /// \endcode
  FP4FUSE_HOST_DEVICE explicit block_codec(float global_encode_scale) : recipe_(global_encode_scale) { detail::require_ieee_float_math(); }

  /// Largest magnitude of a block, ignoring NaN elements (as TE and vLLM do); +0 for an all-zero
  /// or all-NaN block.
  /// \code
  /// float v[16] = {0.1f, -0.7f, 2.5f, -6.0f};  // the rest 0
  /// const float a = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>::block_amax(v);  // 6.0f
  /// \endcode
  FP4FUSE_HOST_DEVICE static float block_amax(const float (&x)[block_size]) {
    float amax = 0.0f;
    FP4FUSE_UNROLL
    for (int i = 0; i < block_size; ++i) {
      amax = detail::max_num(amax, detail::abs_float(x[i]));
    }
    return amax;
  }
  /// Combines two partial amaxes of one block as `block_amax` does (a NaN operand loses), for
  /// reductions across lanes.
  /// \code
  /// const float a = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>::combine_amax(cuda::std::numeric_limits<float>::quiet_NaN(), 2.0f);  // 2.0f
  /// \endcode
  FP4FUSE_HOST_DEVICE static float combine_amax(float a, float b) { return detail::max_num(a, b); }

  /// The block's E4M3 byte and element multiplier for a block amax (recipe.cuh has the formulas).
  /// \code
  /// const fp4fuse::block_scale s = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(448.0f).scale_for(6.0f);  // code 0x7E (448), multiplier 1.0f
  /// \endcode
  FP4FUSE_HOST_DEVICE block_scale scale_for(float block_amax) const { return recipe_.scale_for(block_amax); }

  /// Decodes one block: out[i] = (e2m1(nibble i) * e4m3(scale)) * (1/S). The first product is
  /// exact; the second rounds once.
  /// \code
  /// float v[16] = {0.1f, -0.7f, 2.5f, 6.0f}, out[16];  // the rest 0
  /// const fp4fuse::block_codec<fp4fuse::format::nvfp4<>> codec(448.0f);
  /// codec.dequantize(codec.quantize(v), out);  // {0, -0.5f, 2, 6, 0, ...}
  /// \endcode
  FP4FUSE_HOST_DEVICE void dequantize(const block_type& b, float (&out)[block_size]) const {
    const float sf = scale_value(b.scale);
    FP4FUSE_UNROLL
    for (int i = 0; i < block_size; ++i) {
      out[i] = (detail::packed_element(b.packed, i) * sf) * recipe_.decode_scale;
    }
  }

  /// 1/S (IEEE division): the factor applied after (E2M1 value * decoded scale), the next GEMM's alpha.
  /// \code
  /// const float alpha = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S).global_decode_scale();  // 1.0f / S
  /// \endcode
  FP4FUSE_HOST_DEVICE float global_decode_scale() const { return recipe_.decode_scale; }
  /// The decoded E4M3 block scale of a scale byte (NaN for 0x7F/0xFF).
  /// \code
  /// const float sf = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>::scale_value(0x7E);  // 448.0f
  /// \endcode
  FP4FUSE_HOST_DEVICE static float scale_value(cuda::std::uint8_t code) { return e4m3_decode(code); }

 private:
  detail::nvfp4_recipe<Recipe> recipe_;
};

}  // namespace fp4fuse
