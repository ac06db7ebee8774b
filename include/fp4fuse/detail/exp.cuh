#pragma once
// A portable expf built only from IEEE operations with explicit fma, so that the host and every
// GPU compute the same bits (the CUDA and glibc expf differ in their last bit). Within 2 ulp of exp
// on [-87, 88]; tests/activation.cu measures it against double precision.
#include <cmath>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

namespace fp4fuse::detail {

FP4FUSE_HOST_DEVICE float fma_rn(float a, float b, float c) {
#if FP4FUSE_DEVICE_PASS
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
/// Products and sums that the device compiler must not fuse into an fma (the host would not).
FP4FUSE_HOST_DEVICE float mul_rn(float a, float b) {
#if FP4FUSE_DEVICE_PASS
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FP4FUSE_HOST_DEVICE float add_rn(float a, float b) {
#if FP4FUSE_DEVICE_PASS
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FP4FUSE_HOST_DEVICE float div_rn(float a, float b) {
#if FP4FUSE_DEVICE_PASS
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

/// min/max that keep a NaN operand (the host twin of PTX `min.NaN`/`max.NaN`).
FP4FUSE_HOST_DEVICE float clamp_keep_nan(float x, float lo, float hi) {
#if FP4FUSE_DEVICE_PASS
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(lo));
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(r), "f"(hi));
  return r;
#else
  return x != x ? x : (x < lo ? lo : (x > hi ? hi : x));
#endif
}

/// min(x, hi) keeping a NaN x (PTX `min.NaN`; the host twin compares).
FP4FUSE_HOST_DEVICE float min_keep_nan(float x, float hi) {
#if FP4FUSE_DEVICE_PASS
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(hi));
  return r;
#else
  return x != x ? x : (x > hi ? hi : x);
#endif
}

/// e^x: NaN -> NaN, +Inf above 88.7228, +0 below -103.98 (the argument is clamped to
/// [-104, 89], where the result already over- or underflows).
FP4FUSE_HOST_DEVICE float exp_portable(float x) {
  x = clamp_keep_nan(x, -104.0f, 89.0f);
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
  const float shifted = fma_rn(x, 1.44269502162933349609f, kRoundMagic);
  const float n = add_rn(shifted, -kRoundMagic);  // round(x / ln 2), exact
  float r = fma_rn(n, -0.693145751953125f, x);     // ln 2, high part (exact product)
  r = fma_rn(n, -1.428606765330187045e-06f, r);   // ln 2, low part
  // e^r on |r| <= 0.347: Taylor to degree 7 (truncation < 2^-27 relative).
  float p = 1.98412698412698413e-4f;
  p = fma_rn(p, r, 1.38888888888888889e-3f);
  p = fma_rn(p, r, 8.33333333333333333e-3f);
  p = fma_rn(p, r, 4.16666666666666667e-2f);
  p = fma_rn(p, r, 1.66666666666666667e-1f);
  p = fma_rn(p, r, 0.5f);
  p = fma_rn(p, r, 1.0f);
  p = fma_rn(p, r, 1.0f);
  // 2^n in two normal factors, n in [-150, 129]: the integer n is read off the magic sum's bits
  // (no float-to-int conversion), and each factor's exponent field is built with a multiply-add.
  const int ni = static_cast<int>(float_bits(shifted)) - static_cast<int>(float_bits(kRoundMagic));
  const int half = ni >> 1;
  const float s1 = bits_float(static_cast<cuda::std::uint32_t>(half) * (1u << 23) + (127u << 23));
  const float s2 = bits_float(static_cast<cuda::std::uint32_t>(ni - half) * (1u << 23) + (127u << 23));
  return mul_rn(mul_rn(p, s1), s2);
}

/// log2(e) in float, the factor that turns e^x into 2^(x log2 e) for the hardware exp2.
inline constexpr float log2e_f = 1.44269504088896341f;

/// 2^x with the hardware approximation (`ex2.approx.ftz.f32`, MUFU.EX2) on the device, std::exp2 on
/// the host: the opt-in fast activations' exponential. Not bit-identical between host and device.
FP4FUSE_HOST_DEVICE float exp2_fast(float x) {
#if FP4FUSE_DEVICE_PASS
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return std::exp2(x);
#endif
}

/// x * (1 / (1 + 2^(-x log2 e))) with the fast exp and reciprocal: the sigmoid-weighted x of the
/// fast activations (silu(x) for slope 1). For x below -126 / slope_log2e (-87.3 for silu) the
/// reciprocal is below 2^-126 and `ftz` flushes it (beyond -88.7 the exponential is +Inf): the result
/// is -0 where the exact value is below 1e-35 in magnitude.
FP4FUSE_HOST_DEVICE float x_sigmoid_fast(float x, float slope_log2e) {
  return mul_rn(x, rcp_approx_ftz(add_rn(1.0f, exp2_fast(mul_rn(x, -slope_log2e)))));
}

/// 1 / (1 + e^-x), IEEE division.
FP4FUSE_HOST_DEVICE float sigmoid_portable(float x) { return div_rn(1.0f, add_rn(1.0f, exp_portable(-x))); }

}  // namespace fp4fuse::detail
