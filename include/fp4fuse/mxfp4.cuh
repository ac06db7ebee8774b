#pragma once
/// \file mxfp4.cuh
/// MXFP4 block quantization (OCP Microscaling): 32 consecutive values -> 16 packed E2M1 bytes +
/// one UE8M0 scale, and the inverse. No tensor scale.
///
/// Behaviour: the block amax propagates NaN and Inf; a block containing either gets scale 0xFF
/// (NaN) and every element 0x7 (E2M1 of NaN). An all-zero block gets scale 0x00 (2^-127) and
/// +-0 elements. Element multipliers are exact powers of two, so x * 2^-e rounds only in E2M1.
/// \code
/// fp4fuse::mxfp4_quantizer<> q;            // recipe::mx_ocp
/// fp4fuse::mxfp4_block b = q.quantize(x);  // x: float[32]
/// \endcode
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/recipe.cuh"
#include "fp4fuse/ue8m0.cuh"

namespace fp4fuse {

/// Elements per MXFP4 block (along K).
inline constexpr int mxfp4_block_size = 32;

/// One block's UE8M0 scale byte and the exact multiplier 2^(127 - code) applied to elements.
struct mxfp4_block_scale {
  /// UE8M0 byte: the block scale is 2^(code - 127); 0xFF is NaN.
  cuda::std::uint8_t code;
  /// 2^(127 - code), exact; NaN for code 0xFF.
  float multiplier;
};

/// One quantized block: element i in bits 4(i%8)+3..4(i%8) of `packed[i/8]`, and the UE8M0 byte.
struct mxfp4_block {
  /// Element i in bits 4(i%8)+3..4(i%8) of packed[i/8] (packed order when stored little-endian).
  cuda::std::uint32_t packed[4];
  /// The UE8M0 scale byte.
  cuda::std::uint8_t scale;
};

/// Largest magnitude of a block with NaN winning over everything and Inf over finite values (an
/// integer maximum over the magnitude bits). Works for any block length.
template <int N>
FP4FUSE_HOST_DEVICE float propagating_amax(const float (&x)[N]) {
  cuda::std::uint32_t amax = 0;
FP4FUSE_UNROLL
  for (int i = 0; i < N; ++i) {
    const cuda::std::uint32_t m = detail::float_bits(x[i]) & 0x7FFFFFFFu;
    amax = m > amax ? m : amax;
  }
  return detail::bits_float(amax);
}

namespace detail {
/// The exact multiplier 1 / 2^(code - 127) for a finite scale code; NaN for 0xFF.
FP4FUSE_HOST_DEVICE constexpr float mx_multiplier(cuda::std::uint8_t code) {
  if (code == 0xFFu) {
    return bits_float(0x7FC00000u);
  }
  // 2^(127 - code): exponent field 254 - code is >= 1 for code <= 253; code 254 gives 2^-127.
  return code <= 253u ? bits_float(static_cast<cuda::std::uint32_t>(254u - code) << 23) : bits_float(0x00400000u);
}
}  // namespace detail

/// MXFP4 block quantizer for `Recipe`: `recipe::mx_ocp` (default) or `recipe::mx_round_up`; any
/// other recipe fails a static_assert. Stateless. Each specialisation has `block_scale(amax)`,
/// `encode(x, scale)` and `quantize(x)` (32 floats -> `mxfp4_block`).
template <class Recipe = recipe::mx_ocp>
class mxfp4_quantizer {
  static_assert(sizeof(Recipe) == 0, "mxfp4_quantizer: use recipe::mx_ocp or recipe::mx_round_up");
};

namespace detail {
template <class Derived>
class mxfp4_quantizer_base {
 public:
  /// Encodes 32 elements with a scale from `block_scale`.
  FP4FUSE_HOST_DEVICE mxfp4_block encode(const float (&x)[mxfp4_block_size], mxfp4_block_scale s) const {
    mxfp4_block out{};
FP4FUSE_UNROLL
    for (int word = 0; word < 4; ++word) {
      float y[8];
FP4FUSE_UNROLL
      for (int i = 0; i < 8; ++i) {
        y[i] = x[word * 8 + i] * s.multiplier;
      }
      out.packed[word] = e2m1x8_encode(y);
    }
    out.scale = s.code;
    return out;
  }
  /// amax, scale and encoding of one block.
  FP4FUSE_HOST_DEVICE mxfp4_block quantize(const float (&x)[mxfp4_block_size]) const {
    return encode(x, static_cast<const Derived*>(this)->block_scale(propagating_amax(x)));
  }
};
}  // namespace detail

/// OCP MX: code = clamp(biased_exponent(amax) - 2, 0, 254); NaN or Inf amax -> 0xFF.
template <>
class mxfp4_quantizer<recipe::mx_ocp> : public detail::mxfp4_quantizer_base<mxfp4_quantizer<recipe::mx_ocp>> {
 public:
  /// Scale of a block whose largest magnitude is `block_amax` (sign ignored): code =
  /// max(biased_exponent(amax) - 2, 0), i.e. 2^(floor(log2 amax) - 2), 0x00 for amax < 2^-124;
  /// NaN or Inf -> 0xFF. The multiplier is 2^(127 - code).
  /// \code
  /// fp4fuse::mxfp4_block_scale s = fp4fuse::mxfp4_quantizer<>{}.block_scale(6.0f);  // code 127, multiplier 1
  /// \endcode
  FP4FUSE_HOST_DEVICE mxfp4_block_scale block_scale(float block_amax) const {
    const cuda::std::uint32_t magnitude = detail::float_bits(block_amax) & 0x7FFFFFFFu;
    const cuda::std::uint32_t exponent = magnitude >> 23;
    const cuda::std::uint8_t code =
        exponent == 0xFFu ? 0xFFu : static_cast<cuda::std::uint8_t>(exponent > 2u ? exponent - 2u : 0u);
    return {code, detail::mx_multiplier(code)};
  }
};

/// Round-up variant: code = ue8m0_rp(amax / 6) (IEEE division); NaN or Inf amax -> 0xFF.
template <>
class mxfp4_quantizer<recipe::mx_round_up>
    : public detail::mxfp4_quantizer_base<mxfp4_quantizer<recipe::mx_round_up>> {
 public:
  /// Scale of a block whose largest magnitude is `block_amax` (sign ignored): code =
  /// ue8m0_encode(amax / 6, ue8m0_rounding::up) with IEEE division, the smallest power of two
  /// >= amax / 6; NaN or Inf -> 0xFF. The multiplier is 2^(127 - code).
  /// \code
  /// auto s = fp4fuse::mxfp4_quantizer<fp4fuse::recipe::mx_round_up>{}.block_scale(7.0f);  // code 128 (2)
  /// \endcode
  FP4FUSE_HOST_DEVICE mxfp4_block_scale block_scale(float block_amax) const {
    const cuda::std::uint32_t magnitude = detail::float_bits(block_amax) & 0x7FFFFFFFu;
    const cuda::std::uint8_t code =
        magnitude >= 0x7F800000u ? 0xFFu : ue8m0_encode(detail::bits_float(magnitude) / 6.0f, ue8m0_rounding::up);
    return {code, detail::mx_multiplier(code)};
  }
};

/// Decodes one MXFP4 block: out[i] = e2m1(nibble i) * 2^(scale - 127) (NaN for scale 0xFF).
/// Exact unless the product is a float subnormal on a flush-to-zero device build.
FP4FUSE_HOST_DEVICE void mxfp4_dequantize_block(const mxfp4_block& block, float (&out)[mxfp4_block_size]) {
  const float scale = ue8m0_decode(block.scale);
FP4FUSE_UNROLL
  for (int i = 0; i < mxfp4_block_size; ++i) {
    out[i] = e2m1_decode(static_cast<cuda::std::uint8_t>((block.packed[i / 8] >> (4 * (i % 8))) & 0xFu)) * scale;
  }
}

}  // namespace fp4fuse
