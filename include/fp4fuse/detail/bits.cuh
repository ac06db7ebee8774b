#pragma once
// Bit-level helpers shared by the encoders. Not part of the public API.
#include "fp4fuse/config.cuh"

#include <cuda/std/bit>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

namespace fp4fuse::detail {

FP4FUSE_HOST_DEVICE constexpr cuda::std::uint32_t float_bits(float x) {
  return cuda::std::bit_cast<cuda::std::uint32_t>(x);
}
FP4FUSE_HOST_DEVICE constexpr float bits_float(cuda::std::uint32_t u) {
  return cuda::std::bit_cast<float>(u);
}
/// True for every NaN payload, either sign.
FP4FUSE_HOST_DEVICE constexpr bool is_nan_bits(cuda::std::uint32_t u) {
  return (u & 0x7FFFFFFFu) > 0x7F800000u;
}
/// IEEE minNum/maxNum semantics with a signalling NaN treated as a quiet one (a NaN operand
/// loses; two NaNs give a NaN; of two zeros either may come back) in a constexpr-friendly form;
/// nvcc lowers these to FMNMX on the device.
FP4FUSE_HOST_DEVICE constexpr float min_num(float a, float b) {
#if FP4FUSE_DEVICE_PASS
  if (!cuda::std::is_constant_evaluated()) {
    return fminf(a, b);
  }
#endif
  return (a != a) ? b : (b != b) ? a : (b < a ? b : a);
}
FP4FUSE_HOST_DEVICE constexpr float max_num(float a, float b) {
#if FP4FUSE_DEVICE_PASS
  if (!cuda::std::is_constant_evaluated()) {
    return fmaxf(a, b);
  }
#endif
  return (a != a) ? b : (b != b) ? a : (b > a ? b : a);
}
FP4FUSE_HOST_DEVICE constexpr float abs_float(float x) {
#if FP4FUSE_DEVICE_PASS
  if (!cuda::std::is_constant_evaluated()) {
    return fabsf(x);  // a free operand modifier on the GPU
  }
#endif
  return bits_float(float_bits(x) & 0x7FFFFFFFu);
}

/// The one approximate reciprocal (vLLM's recipe, the fast activations' division):
/// `rcp.approx.ftz.f32` (MUFU.RCP) on the device. The host computes IEEE 1/x with the same
/// flush-to-zero of subnormal inputs and results, so the two differ by at most the instruction's
/// approximation error (measured: tests/nvfp4.cu).
FP4FUSE_HOST_DEVICE float rcp_approx_ftz(float x) {
#if FP4FUSE_DEVICE_PASS
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  const auto flush = [](float v) { return (float_bits(v) & 0x7F800000u) == 0 ? bits_float(float_bits(v) & 0x80000000u) : v; };
  return flush(1.0f / flush(x));
#endif
}

}  // namespace fp4fuse::detail
