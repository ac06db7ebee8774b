#pragma once
/// \file format.cuh
/// Output formats as tag types, and `block_codec<Format>`: the one interface kernels and
/// epilogues use to turn a block of floats into packed E2M1 words and a scale byte.
/// \code
/// using F = fp4fuse::format::nvfp4<fp4fuse::recipe::vllm>;
/// fp4fuse::block_codec<F> codec(global_encode_scale);  // ignored by MX formats
/// float x[F::block_size]; uint32_t words[F::words_per_block];
/// uint8_t scale = codec.quantize(x, words);
/// \endcode
#include "fp4fuse/config.cuh"
#include "fp4fuse/mxfp4.cuh"
#include "fp4fuse/nvfp4.cuh"
#include "fp4fuse/recipe.cuh"

namespace fp4fuse {
namespace format {

/// NVFP4: 16-element blocks, E4M3 scales, a per-tensor FP32 scale.
template <class Recipe = recipe::te_exact>
struct nvfp4 {
  /// The block-scale recipe: `recipe::te_exact` (default) or `recipe::vllm`.
  using recipe_type = Recipe;
  /// Elements per block: 16.
  static constexpr int block_size = nvfp4_block_size;
  /// True: NVFP4 values are also scaled by the per-tensor FP32 scale S.
  static constexpr bool has_global_scale = true;
};

/// MXFP4: 32-element blocks, UE8M0 scales, no tensor scale.
template <class Recipe = recipe::mx_ocp>
struct mxfp4 {
  /// The block-scale recipe: `recipe::mx_ocp` (default) or `recipe::mx_round_up`.
  using recipe_type = Recipe;
  /// Elements per block: 32.
  static constexpr int block_size = mxfp4_block_size;
  /// False: MXFP4 has no tensor scale.
  static constexpr bool has_global_scale = false;
};

}  // namespace format

/// Turns one block of floats into packed E2M1 words and a scale byte for `Format`
/// (`format::nvfp4<Recipe>` or `format::mxfp4<Recipe>`); the specialisations below define it.
template <class Format>
class block_codec;

/// NVFP4 with any recipe.
template <class Recipe>
class block_codec<format::nvfp4<Recipe>> {
 public:
  /// Elements per block: 16.
  static constexpr int block_size = 16;
  /// 32-bit words per block: 2 (elements 0-7, 8-15; element i in bits 4(i%8)+3..4(i%8)).
  static constexpr int words_per_block = 2;

  /// Builds `nvfp4_quantizer<Recipe>(global_encode_scale)`.
  /// \param global_encode_scale S, finite and positive, e.g. from `nvfp4_global_encode_scale`.
  FP4FUSE_HOST_DEVICE explicit block_codec(float global_encode_scale) : quantizer_(global_encode_scale) {}

  /// Quantizes x (amax ignoring NaN) into two words (elements 0-7, 8-15); returns the E4M3 scale.
  FP4FUSE_HOST_DEVICE cuda::std::uint8_t quantize(const float (&x)[16], cuda::std::uint32_t (&words)[2]) const {
    const nvfp4_block_scale s = quantizer_.block_scale(nvfp4_block_amax(x));
    const cuda::std::uint64_t packed = quantizer_.encode(x, s);
    words[0] = static_cast<cuda::std::uint32_t>(packed);
    words[1] = static_cast<cuda::std::uint32_t>(packed >> 32);
    return s.code;
  }
  /// The factor that multiplies (E2M1 value * decoded scale): 1/S.
  FP4FUSE_HOST_DEVICE float decode_scale() const { return quantizer_.decode_scale(); }
  /// Decoded block scale.
  FP4FUSE_HOST_DEVICE static float scale_value(cuda::std::uint8_t code) { return e4m3_decode(code); }

 private:
  nvfp4_quantizer<Recipe> quantizer_;
};

/// MXFP4 with any MX recipe.
template <class Recipe>
class block_codec<format::mxfp4<Recipe>> {
 public:
  /// Elements per block: 32.
  static constexpr int block_size = 32;
  /// 32-bit words per block: 4 (element i in bits 4(i%8)+3..4(i%8) of word i/8).
  static constexpr int words_per_block = 4;

  /// MX has no tensor scale: the argument is ignored.
  FP4FUSE_HOST_DEVICE explicit block_codec(float = 1.0f) {}

  /// Quantizes x with `mxfp4_quantizer<Recipe>` (amax from `propagating_amax`) into four words
  /// (elements 0-7, 8-15, 16-23, 24-31); returns the UE8M0 scale, 0xFF if x holds a NaN or Inf.
  FP4FUSE_HOST_DEVICE cuda::std::uint8_t quantize(const float (&x)[32], cuda::std::uint32_t (&words)[4]) const {
    const mxfp4_quantizer<Recipe> q;
    const mxfp4_block b = q.encode(x, q.block_scale(propagating_amax(x)));
    FP4FUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      words[i] = b.packed[i];
    }
    return b.scale;
  }
  /// Always 1: MX has no tensor scale.
  FP4FUSE_HOST_DEVICE float decode_scale() const { return 1.0f; }
  /// Decoded block scale: 2^(code - 127), NaN for 0xFF (`ue8m0_decode`).
  FP4FUSE_HOST_DEVICE static float scale_value(cuda::std::uint8_t code) { return ue8m0_decode(code); }
};

}  // namespace fp4fuse
