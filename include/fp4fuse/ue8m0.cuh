#pragma once
/// \file ue8m0.cuh
/// UE8M0 (the MX block-scale format): an unsigned power of two 2^(e-127), e in 0..254; 0xFF is NaN.
///
/// Numerics (identical on every path, and to the toolkit's `__nv_cvt_float_to_e8m0(x,
/// __NV_SATFINITE, mode)`): the sign of x is ignored; NaN -> 0xFF; +-Inf -> 0xFE (satfinite).
/// - round toward zero (`ue8m0_rounding::toward_zero`): e = the biased exponent field of |x|,
///   so zero and every float subnormal give 0x00 (2^-127).
/// - round up (`ue8m0_rounding::up`): the smallest power of two >= |x|, computed as the toolkit
///   does (|x| rounded up to bfloat16 first, then up to a power of two): |x| <= 2^-127 -> 0x00;
///   results above 2^127 saturate to 0xFE.
/// Paths: `cvt.rz/rp.satfinite.ue8m0x2.f32` on sm_100a-family targets, integer code elsewhere.
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

namespace fp4fuse {

/// Rounding of a float to a UE8M0 power of two.
enum class ue8m0_rounding : int {
  toward_zero = 0,  ///< largest power of two <= |x| (PTX `.rz`)
  up = 1,           ///< smallest power of two >= |x| (PTX `.rp`), what MX scale computations use
};

/// Portable UE8M0 satfinite encoder, usable in constant expressions.
/// \code
/// static_assert(fp4fuse::ue8m0_encode_software(3.0f, fp4fuse::ue8m0_rounding::up) == 129);
/// \endcode
FP4FUSE_HOST_DEVICE constexpr cuda::std::uint8_t ue8m0_encode_software(float x, ue8m0_rounding rounding) {
  const cuda::std::uint32_t magnitude = detail::float_bits(x) & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    return 0xFFu;
  }
  if (rounding == ue8m0_rounding::toward_zero) {
    const cuda::std::uint32_t e = magnitude >> 23;
    return static_cast<cuda::std::uint8_t>(e == 0xFFu ? 0xFEu : e);
  }
  // Round |x| up to bfloat16 (finite values only), then up to a power of two unless the bf16
  // is already one or lies at or below 2^-127.
  const cuda::std::uint32_t bf16 = magnitude >= 0x7F800000u ? 0x7F80u : (magnitude + 0xFFFFu) >> 16;
  cuda::std::uint32_t e = bf16 >> 7;
  if ((bf16 & 0x7Fu) != 0 && bf16 > 0x0040u && bf16 < 0x7F80u) {
    ++e;
  }
  return static_cast<cuda::std::uint8_t>(e >= 0xFFu ? 0xFEu : e);
}

/// Encodes |x| to UE8M0 with satfinite and the given rounding. Numerics: see the file comment.
/// \code
/// uint8_t s = fp4fuse::ue8m0_encode(amax / 6.0f, fp4fuse::ue8m0_rounding::up);
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint8_t ue8m0_encode(float x, ue8m0_rounding rounding) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  cuda::std::uint16_t out;
  if (rounding == ue8m0_rounding::up) {
    asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %2, %1;" : "=h"(out) : "f"(x), "f"(0.0f));
  } else {
    asm("cvt.rz.satfinite.ue8m0x2.f32 %0, %2, %1;" : "=h"(out) : "f"(x), "f"(0.0f));
  }
  return static_cast<cuda::std::uint8_t>(out & 0xFFu);
#else
  return ue8m0_encode_software(x, rounding);
#endif
}

/// Decodes a UE8M0 byte to float: 2^(code-127), 0xFF -> NaN. Code 0 gives the float subnormal
/// 2^-127 (flushed to zero by `-ftz=true` device arithmetic that consumes it).
/// \code
/// static_assert(fp4fuse::ue8m0_decode(127) == 1.0f);
/// \endcode
FP4FUSE_HOST_DEVICE constexpr float ue8m0_decode(cuda::std::uint8_t code) {
  if (code == 0xFFu) {
    return detail::bits_float(0x7FC00000u);
  }
  return code == 0 ? detail::bits_float(0x00400000u) : detail::bits_float(static_cast<cuda::std::uint32_t>(code) << 23);
}

}  // namespace fp4fuse
