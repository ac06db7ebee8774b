#pragma once
/// \file format.cuh
/// Output formats as tag types (`format::nvfp4<Recipe>`, `format::mxfp4<Recipe>`), the two value
/// types every codec returns (`block_scale`, `quantized_block<Format>`), and the declaration of
/// `block_codec<Format>`, the one way to quantize a block. Its definitions are in nvfp4.cuh and
/// mxfp4.cuh (both included by fp4fuse.cuh). Every kernel and every epilogue takes a format tag.
/// \code
/// using F = fp4fuse::format::nvfp4<fp4fuse::recipe::vllm>;
/// static_assert(F::block_size == 16 && F::words_per_block == 2);
/// \endcode
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/recipe.cuh"

namespace fp4fuse {
namespace format {

/// NVFP4: 16-element blocks, E4M3 block scales, a per-tensor FP32 global scale S.
/// `Recipe`: `recipe::te_exact` (the default) or `recipe::vllm`; any other recipe fails a
/// static_assert.
template <class Recipe = recipe::te_exact>
struct nvfp4 {
  static_assert(cuda::std::is_same_v<Recipe, recipe::te_exact> || cuda::std::is_same_v<Recipe, recipe::vllm>,
                "fp4fuse::format::nvfp4<Recipe>: Recipe must be recipe::te_exact or recipe::vllm");
  /// The block-scale recipe.
  using recipe_type = Recipe;
  /// Elements per block: 16.
  static constexpr int block_size = 16;
  /// 32-bit words of packed E2M1 per block: 2.
  static constexpr int words_per_block = 2;
  /// True: values are also scaled by the per-tensor FP32 scale S.
  static constexpr bool has_global_scale = true;
};

/// MXFP4 (OCP Microscaling): 32-element blocks, UE8M0 block scales, no tensor scale.
/// `Recipe`: `recipe::mx_ocp` (the default) or `recipe::mx_round_up`; any other recipe fails a
/// static_assert.
template <class Recipe = recipe::mx_ocp>
struct mxfp4 {
  static_assert(cuda::std::is_same_v<Recipe, recipe::mx_ocp> || cuda::std::is_same_v<Recipe, recipe::mx_round_up>,
                "fp4fuse::format::mxfp4<Recipe>: Recipe must be recipe::mx_ocp or recipe::mx_round_up");
  /// The block-scale recipe.
  using recipe_type = Recipe;
  /// Elements per block: 32.
  static constexpr int block_size = 32;
  /// 32-bit words of packed E2M1 per block: 4.
  static constexpr int words_per_block = 4;
  /// False: MXFP4 has no tensor scale.
  static constexpr bool has_global_scale = false;
};

}  // namespace format

namespace detail {
template <class T>
inline constexpr bool is_format = false;
template <class R>
inline constexpr bool is_format<format::nvfp4<R>> = true;
template <class R>
inline constexpr bool is_format<format::mxfp4<R>> = true;
template <class T>
inline constexpr bool is_nvfp4 = false;
template <class R>
inline constexpr bool is_nvfp4<format::nvfp4<R>> = true;
}  // namespace detail

/// One block's scale as a codec computes it: the byte stored in the scale tensor (E4M3 for
/// NVFP4, UE8M0 for MXFP4) and the factor each element is multiplied by before E2M1 encoding.
struct block_scale {
  /// The scale byte stored in the scale tensor.
  cuda::std::uint8_t code;
  /// Element multiplier: code_i = e2m1(x_i * multiplier) (recipe-specific, see recipe.cuh).
  float multiplier;
};

namespace detail {
/// A quantized block of `Words` packed words (see `quantized_block`).
template <int Words>
struct packed_block {
  /// Packed E2M1 nibbles, 8 per word.
  cuda::std::uint32_t packed[Words];
  /// The block's scale byte.
  cuda::std::uint8_t scale;
};
}  // namespace detail

/// One quantized block of `Format`: element i in bits 4(i%8)+3..4(i%8) of `packed[i/8]` (the
/// standard packed order when the words are stored little-endian), and the scale byte `scale`.
/// The same type for every recipe of a format (NVFP4: 2 words, MXFP4: 4 words).
template <class Format>
using quantized_block = detail::packed_block<Format::words_per_block>;

/// Quantizes and dequantizes blocks of `Format`; specialised in nvfp4.cuh and mxfp4.cuh. Every
/// specialisation has the same members: `block_amax`, `combine_amax`, `scale_for`, `encode`,
/// `quantize`, `dequantize`, `global_decode_scale`, `scale_value`. NVFP4's is built from the global
/// encode scale S, MXFP4's from nothing; `make_block_codec` builds either.
template <class Format>
class block_codec {
  static_assert(detail::is_format<Format>,
                "fp4fuse::block_codec<Format>: Format must be format::nvfp4<Recipe> or format::mxfp4<Recipe> "
                "(defined in fp4fuse/nvfp4.cuh and fp4fuse/mxfp4.cuh)");
};

/// The codec of `Format`, for code written for both formats: `block_codec<Format>(S)` for NVFP4,
/// `block_codec<Format>()` for MXFP4, which has no global scale (S is not used; pass 1).
/// \code
/// const auto codec = fp4fuse::make_block_codec<fp4fuse::format::mxfp4<>>(1.0f);  // == block_codec<format::mxfp4<>>()
/// \endcode
template <class Format>
FP4FUSE_HOST_DEVICE block_codec<Format> make_block_codec(float global_encode_scale) {
  if constexpr (Format::has_global_scale) {
    return block_codec<Format>(global_encode_scale);
  } else {
    (void)global_encode_scale;
    return block_codec<Format>();
  }
}

}  // namespace fp4fuse
