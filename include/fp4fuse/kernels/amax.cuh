#pragma once
/// \file kernels/amax.cuh
/// Tensor absolute maximum on the device (CUB block reduction + one atomic per CTA), and the
/// NVFP4 global encode scale derived from it, both written to device memory so that a following
/// `quantize` in the same stream (or CUDA graph) reads S without a host round trip.
///
/// NaN: `nan_policy::ignore` (the default; TE and vLLM take maxima with fmaxf, which drops NaN)
/// or `nan_policy::propagate` (any NaN makes the amax NaN, and then S = 1 by
/// `nvfp4_global_encode_scale`). +-Inf gives amax Inf (and S = 1).
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/kernel_support.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

namespace nan_policy {
/// NaN elements do not take part (fmaxf semantics).
struct ignore {};
/// A NaN element makes the result NaN.
struct propagate {};
}  // namespace nan_policy

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
__global__ void __launch_bounds__(amax_threads) amax_kernel(const T* __restrict__ in, fast_divmod vecs_per_row,
                                                            cuda::std::int64_t ld, cuda::std::uint32_t total,
                                                            cuda::std::uint32_t* __restrict__ amax_bits) {
  constexpr int V = vec_elems<T>;
  // One 16-byte load per thread and step: measured faster on the H200 than four (78% vs 65% of
  // copy bandwidth), with 2048 threads per SM keeping enough bytes in flight.
  cuda::std::uint32_t local = 0;
  for (cuda::std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const cuda::std::uint32_t row = vecs_per_row.div(i);
    float x[V];
    load_floats(in + row * ld + static_cast<cuda::std::int64_t>(i - row * vecs_per_row.divisor) * V, x);
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

__global__ void global_scale_kernel(const float* amax, float* global_encode_scale) {
  *global_encode_scale = nvfp4_global_encode_scale(*amax);
}

}  // namespace detail

/// Writes max |x| over a [rows, cols] matrix (leading dimension `ld` in elements) to `*amax`
/// (device memory), and, if `global_encode_scale` is not null, S = nvfp4_global_encode_scale(amax)
/// to it. Requirements: `in` 16-byte aligned, `cols` and `ld` multiples of 16 bytes / sizeof(T).
/// rows * cols / (16 / sizeof(T)) must stay below 2^30 vectors (bad_shape otherwise). Two
/// kernels and a memset on `stream`; no host synchronisation.
/// \code
/// fp4fuse::amax(x, M, K, K, d_amax, d_S, stream);   // then quantize reads d_S
/// \endcode
template <class NanPolicy = nan_policy::ignore, class T>
result amax(const T* in, cuda::std::int64_t rows, cuda::std::int64_t cols, cuda::std::int64_t ld, float* amax,
            float* global_encode_scale = nullptr, cudaStream_t stream = nullptr) {
  static_assert(detail::is_supported_element<T>, "amax: input must be __nv_bfloat16, __half or float");
  constexpr int V = detail::vec_elems<T>;
  if (in == nullptr || amax == nullptr) return {status::null_pointer};
  if (rows < 0 || cols < 0) return {status::bad_shape};
  if (cols % V != 0) return {status::not_multiple_of_block};
  if (!detail::is_aligned(in, 16) || !detail::is_aligned(amax, 4) ||
      (global_encode_scale != nullptr && !detail::is_aligned(global_encode_scale, 4))) {
    return {status::misaligned_pointer};
  }
  if (ld < cols || ld % V != 0) return {status::bad_leading_dimension};
  auto* kernel = &detail::amax_kernel<NanPolicy, T>;
  if (result r = detail::check_kernel_image(kernel); !r) return r;
  if (const cudaError_t err = cudaMemsetAsync(amax, 0, sizeof(float), stream); err != cudaSuccess) {
    return {status::cuda_error, err};
  }
  const cuda::std::int64_t vecs = rows * (cols / V);
  if (vecs >= (cuda::std::int64_t(1) << 30)) {
    return {status::bad_shape};  // 32-bit indexing of 16-byte vectors
  }
  if (vecs > 0) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const cuda::std::int64_t wanted = (vecs + detail::amax_threads - 1) / detail::amax_threads;
    const int grid = static_cast<int>(wanted < sms * 8 ? wanted : sms * 8);
    kernel<<<grid, detail::amax_threads, 0, stream>>>(in, detail::fast_divmod(static_cast<cuda::std::uint32_t>(cols / V)), ld,
                                                      static_cast<cuda::std::uint32_t>(vecs),
                                                      reinterpret_cast<cuda::std::uint32_t*>(amax));
    if (result r = detail::launch_result(); !r) return r;
  }
  if (global_encode_scale != nullptr) {
    detail::global_scale_kernel<<<1, 1, 0, stream>>>(amax, global_encode_scale);
    return detail::launch_result();
  }
  return {};
}

}  // namespace fp4fuse
