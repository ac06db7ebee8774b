#pragma once
// Division by a divisor fixed at launch, without a hardware divide (the kernels' index
// arithmetic). Not part of the public API.
#include <cuda/std/cstdint>

#include "fp4fuse/config.cuh"

namespace fp4fuse::detail {

/// n / d for a divisor fixed at launch, without a hardware divide: with s = ceil(log2 d) and
/// m = floor(2^32 (2^s - d) / d) + 1, q = (umulhi(n, m) + n) >> s, exact for every n < 2^31
/// (launchers keep grids below that, so the sum cannot overflow).
struct fast_div {
  cuda::std::uint32_t divisor = 1;
  cuda::std::uint32_t multiplier = 1;
  cuda::std::uint32_t shift = 0;

  fast_div() = default;
  explicit fast_div(cuda::std::uint32_t d) : divisor(d) {
    while ((cuda::std::uint64_t(1) << shift) < d) ++shift;
    multiplier = static_cast<cuda::std::uint32_t>(((cuda::std::uint64_t(1) << 32) * ((cuda::std::uint64_t(1) << shift) - d)) / d + 1);
  }
  FP4FUSE_HOST_DEVICE cuda::std::uint32_t operator()(cuda::std::uint32_t n) const {
#if FP4FUSE_DEVICE_PASS
    return (__umulhi(n, multiplier) + n) >> shift;
#else
    return static_cast<cuda::std::uint32_t>((((cuda::std::uint64_t(n) * multiplier) >> 32) + n) >> shift);
#endif
  }
};

}  // namespace fp4fuse::detail
