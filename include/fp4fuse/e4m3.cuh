#pragma once
/// \file e4m3.cuh
/// FP8 E4M3 (`fn`: max 448, NaN 0x7F/0xFF, no Inf) encode with satfinite, and decode.
///
/// Numerics (identical on every path, and to the toolkit's
/// `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)`): round to nearest even; |x| > 464 and
/// +-Inf -> +-448 (0x7E/0xFE); 464 itself ties to 448; NaN of either sign -> 0x7F;
/// |x| <= 2^-10 -> +-0 with the sign kept (-0 -> 0x80); subnormals have quantum 2^-9.
///
/// Paths: `cvt.rn.satfinite.e4m3x2.f32` on sm_89 and later; a software encoder on the host and
/// sm_80 (integer rounding for normals, one float add for subnormals).
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

#include <cuda_fp16.h>

namespace fp4fuse {

/// E4M3's largest finite value.
inline constexpr float e4m3_max = 448.0f;

/// Portable E4M3 satfinite encoder, usable in constant expressions and on every target.
/// \code
/// static_assert(fp4fuse::e4m3_encode_software(500.0f) == 0x7E);
/// \endcode
FP4FUSE_HOST_DEVICE constexpr cuda::std::uint8_t e4m3_encode_software(float x) {
  const cuda::std::uint32_t bits = detail::float_bits(x);
  const cuda::std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  const cuda::std::uint32_t sign = (bits >> 24) & 0x80u;
  // Normal range [2^-6, 464]: round the float's mantissa to 3 bits, ties to even, and rebias the
  // exponent from 127 to 7. Rounding may carry into the exponent, which is the right answer.
  const cuda::std::uint32_t rounded = (magnitude + 0x7FFFFu + ((magnitude >> 20) & 1u)) >> 20;
  const cuda::std::uint32_t normal = rounded - ((127u - 7u) << 3);
  // Subnormal range (0, 2^-6): quantum 2^-9; adding 2^14 (ulp 2^-9) rounds once, ties to even.
  // The code of 2^-6 itself (0x08) comes out of this branch as well as the normal one.
  const float v = detail::bits_float(magnitude);
  const cuda::std::uint32_t subnormal = detail::float_bits(v + 16384.0f) - 0x46800000u;
  cuda::std::uint32_t code = magnitude < 0x3C800000u ? subnormal : normal;
  code = magnitude > 0x43E80000u ? 0x7Eu : code;  // above 464 (and Inf): saturate to 448
  return static_cast<cuda::std::uint8_t>(detail::is_nan_bits(bits) ? 0x7Fu : (code | sign));
}

namespace detail {
#if FP4FUSE_ARCH_HAS_E4M3_CVT
// `cvt.rn.satfinite.e4m3x2.f32 d, a, b`: a -> high byte, b -> low byte.
FP4FUSE_DEVICE cuda::std::uint16_t e4m3x2_cvt(float lo, float hi) {
  cuda::std::uint16_t out;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(out) : "f"(lo), "f"(hi));
  return out;
}
// `cvt.rn.f16x2.e4m3x2 d, a`: low byte of a -> low half of d.
FP4FUSE_DEVICE cuda::std::uint32_t e4m3x2_to_half2_cvt(cuda::std::uint16_t pair) {
  cuda::std::uint32_t out;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(out) : "h"(pair));
  return out;
}
#endif
}  // namespace detail

/// Encodes one float to E4M3 with satfinite. Numerics: see the file comment.
/// \code
/// uint8_t s = fp4fuse::e4m3_encode(0.3f);  // 0x2A (0.3125)
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint8_t e4m3_encode(float x) {
#if FP4FUSE_ARCH_HAS_E4M3_CVT
  return static_cast<cuda::std::uint8_t>(detail::e4m3x2_cvt(x, 0.0f) & 0xFFu);
#else
  return e4m3_encode_software(x);
#endif
}

/// Encodes two floats: `lo` in bits 7..0, `hi` in bits 15..8.
/// \code
/// uint16_t w = fp4fuse::e4m3x2_encode(448.0f, 0.3f);  // 0x2A7E: lo 0x7E (448), hi 0x2A (0.3125)
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint16_t e4m3x2_encode(float lo, float hi) {
#if FP4FUSE_ARCH_HAS_E4M3_CVT
  return detail::e4m3x2_cvt(lo, hi);
#else
  return static_cast<cuda::std::uint16_t>(e4m3_encode_software(lo) | (e4m3_encode_software(hi) << 8));
#endif
}

/// Decodes an E4M3 byte to float, exactly. Both NaN codes (0x7F, 0xFF) give the positive quiet NaN
/// 0x7FC00000, as the toolkit's decoder does.
/// \code
/// static_assert(fp4fuse::e4m3_decode(0x7E) == 448.0f);
/// \endcode
FP4FUSE_HOST_DEVICE constexpr float e4m3_decode(cuda::std::uint8_t code) {
#if FP4FUSE_ARCH_HAS_E4M3_CVT
  if (!cuda::std::is_constant_evaluated()) {
    // cvt.rn.f16x2.e4m3x2 gives 0x7FFF (positive NaN) for both NaN codes, like the toolkit.
    const float f = __half2float(__ushort_as_half(static_cast<unsigned short>(detail::e4m3x2_to_half2_cvt(code) & 0xFFFFu)));
    return f != f ? detail::bits_float(0x7FC00000u) : f;
  }
#endif
  const cuda::std::uint32_t sign = static_cast<cuda::std::uint32_t>(code & 0x80u) << 24;
  const cuda::std::uint32_t exponent = (code >> 3) & 0xFu;
  const cuda::std::uint32_t mantissa = code & 0x7u;
  if ((code & 0x7Fu) == 0x7Fu) {
    return detail::bits_float(0x7FC00000u);
  }
  if (exponent == 0) {  // subnormal: mantissa * 2^-9, exact in float
    return detail::bits_float(detail::float_bits(static_cast<float>(mantissa) * 0.001953125f) | sign);
  }
  return detail::bits_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

}  // namespace fp4fuse
