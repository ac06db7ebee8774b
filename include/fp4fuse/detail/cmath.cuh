#pragma once
// <cuda/cmath> across the CCCL versions fp4fuse supports (2.8, which CUDA 12.9 ships, and later):
// `cuda::round_up` arrived in CCCL 3.0. Not part of the public API.
#include <cuda/cmath>
#include <cuda/std/type_traits>
#include <cuda/version>

#include "fp4fuse/config.cuh"

namespace fp4fuse::detail {

/// `a` rounded up to a multiple of `b` (a >= 0, b > 0), in the common type of the two: CCCL's
/// `cuda::round_up` where it exists (CCCL 3.0 and later), else `cuda::ceil_div(a, b) * b` in that
/// type.
template <class T, class U>
FP4FUSE_HOST_DEVICE constexpr cuda::std::common_type_t<T, U> round_up(T a, U b) {
#if CCCL_MAJOR_VERSION >= 3
  return cuda::round_up(a, b);
#else
  using common = cuda::std::common_type_t<T, U>;
  return static_cast<common>(cuda::ceil_div(static_cast<common>(a), static_cast<common>(b)) * static_cast<common>(b));
#endif
}

}  // namespace fp4fuse::detail
