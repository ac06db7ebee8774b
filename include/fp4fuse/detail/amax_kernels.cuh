#pragma once
// The kernels of kernels/amax.cuh (the tensor-amax kernel and the kernel that derives S from it)
// and their launch geometry; the launcher there validates the arguments first.
// Not part of the public API.
#include <cub/block/block_reduce.cuh>
#include <cuda/cmath>
#include <cuda/functional>
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/fast_div.cuh"
#include "fp4fuse/detail/launch.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/nan_policy.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

namespace detail {

/// |x| as ordered integer bits; NaN maps to 0 (ignore) or stays above +Inf (propagate).
template <class NanPolicy>
FP4FUSE_HOST_DEVICE cuda::std::uint32_t magnitude_key(float x) {
  const cuda::std::uint32_t m = float_bits(x) & 0x7FFFFFFFu;
  if constexpr (cuda::std::is_same_v<NanPolicy, nan_policy::ignore>) {
    return m > 0x7F800000u ? 0u : m;
  } else {
    return m;
  }
}

constexpr int amax_threads = 256;

template <class NanPolicy, class T>
__global__ void __launch_bounds__(amax_threads) amax_kernel(matrix_view<const T> in, fast_div vecs_per_row, cuda::std::uint32_t total,
                                                            cuda::std::uint32_t* __restrict__ amax_bits) {
  constexpr int V = vec_elems<T>;
  // One 16-byte load per thread and step: measured faster on the H200 than four (78% vs 65% of
  // copy bandwidth), with 2048 threads per SM keeping enough bytes in flight.
  cuda::std::uint32_t local = 0;
  for (cuda::std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const cuda::std::uint32_t row = vecs_per_row(i);
    float x[V];
    load_floats(in.data + row * in.ld + static_cast<cuda::std::int64_t>(i - row * vecs_per_row.divisor) * V, x);
    FP4FUSE_UNROLL
    for (int j = 0; j < V; ++j) {
      const cuda::std::uint32_t k = magnitude_key<NanPolicy>(x[j]);
      local = k > local ? k : local;
    }
  }
  using reduce_t = cub::BlockReduce<cuda::std::uint32_t, amax_threads>;
  __shared__ typename reduce_t::TempStorage storage;
  const cuda::std::uint32_t block_max = reduce_t(storage).Reduce(local, cuda::maximum<>{});
  if (threadIdx.x == 0 && block_max != 0) {
    atomicMax(amax_bits, block_max);
  }
}

/// A template (like every kernel in a header) so that several translation units can include it.
template <int = 0>
__global__ void global_scale_kernel(const float* amax, float* global_encode_scale) {
  require_ieee_float_math();
  *global_encode_scale = nvfp4_global_encode_scale(*amax);
}

}  // namespace detail

}  // namespace fp4fuse
