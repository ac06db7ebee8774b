#pragma once
// Reference block quantizers written from the peers' documented formulas (NVFP4.md), on top of
// the toolkit's own conversions. Host only; independent of fp4fuse's encoders.
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

namespace fp4fuse_test::reference {

inline std::uint8_t fp4(float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); }
inline std::uint8_t fp8(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
inline float fp8_value(std::uint8_t code) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3)));
}

struct block_result {
  std::uint8_t codes[32];
  std::uint8_t scale;
  float multiplier;
};

/// max |x| ignoring every NaN, quiet or signalling, as the GPU's fmaxf (and so TE and vLLM) does.
/// (glibc's fmax returns NaN for a signalling NaN, IEEE 754-2008 maxNum, so it is not used here.)
template <int N>
float amax_ignoring_nan(const float (&x)[N]) {
  float m = 0.0f;
  for (float v : x) {
    if (!std::isnan(v)) m = std::max(m, std::fabs(v));
  }
  return m;
}

/// TransformerEngine: sf = e4m3(amax * (S * (1/6))); mult = min(1 / (sf * (1/S)), FLT_MAX).
inline block_result te_nvfp4(const float (&x)[16], float S) {
  block_result r{};
  const float amax = amax_ignoring_nan(x);
  r.scale = fp8(amax * (S * (1.0f / 6.0f)));
  const float sf = fp8_value(r.scale);
  r.multiplier = std::fmin(1.0f / (sf * (1.0f / S)), FLT_MAX);
  for (int i = 0; i < 16; ++i) r.codes[i] = fp4(x[i] * r.multiplier);
  return r;
}

/// vLLM's `rcp.approx.ftz` modelled as a correctly rounded reciprocal with subnormal inputs and
/// results flushed to zero.
inline float rcp_ftz(float x) {
  auto flush = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; };
  return flush(1.0f / flush(x));
}

/// vLLM: sf = e4m3(S * (amax * rcp(6))); mult = sf ? rcp(sf * rcp(S)) : 0.
inline block_result vllm_nvfp4(const float (&x)[16], float S) {
  block_result r{};
  const float amax = amax_ignoring_nan(x);
  r.scale = fp8(S * (amax * rcp_ftz(6.0f)));
  const float sf = fp8_value(r.scale);
  r.multiplier = sf != 0.0f ? rcp_ftz(sf * rcp_ftz(S)) : 0.0f;
  for (int i = 0; i < 16; ++i) r.codes[i] = fp4(x[i] * r.multiplier);
  return r;
}

/// max |x| where NaN beats Inf beats finite (the MX convention).
inline float amax_propagating(const float (&x)[32]) {
  bool nan = false, inf = false;
  float m = 0.0f;
  for (float v : x) {
    nan |= std::isnan(v);
    inf |= std::isinf(v);
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  }
  return nan ? NAN : inf ? INFINITY : m;
}

/// An MX block from its scale code's formula (`code_of(amax)` for a finite amax): non-finite ->
/// NaN scale (0xFF); the multiplier 2^(127 - code); codes fp4(x * multiplier).
template <class CodeOf>
inline block_result mx_block(const float (&x)[32], CodeOf code_of) {
  block_result r{};
  const float amax = amax_propagating(x);
  if (!std::isfinite(amax)) {
    r.scale = 0xFF;
    r.multiplier = NAN;
  } else {
    r.scale = code_of(amax);
    r.multiplier = std::ldexp(1.0f, 127 - r.scale);
  }
  for (int i = 0; i < 32; ++i) r.codes[i] = fp4(x[i] * r.multiplier);
  return r;
}

/// OCP MX v1.0: X = 2^(floor(log2 amax) - 2), code clamped to [0, 254]; non-finite -> NaN scale.
inline block_result ocp_mxfp4(const float (&x)[32]) {
  return mx_block(x, [](float amax) {
    const int e = amax == 0.0f ? -1000 : std::ilogb(amax) - 2 + 127;
    return static_cast<std::uint8_t>(std::clamp(e, 0, 254));
  });
}

/// Round-up MX: code = ue8m0_rp(amax / 6); non-finite -> NaN scale.
inline block_result round_up_mxfp4(const float (&x)[32]) {
  return mx_block(x, [](float amax) { return static_cast<std::uint8_t>(__nv_cvt_float_to_e8m0(amax / 6.0f, __NV_SATFINITE, cudaRoundPosInf)); });
}

}  // namespace fp4fuse_test::reference
