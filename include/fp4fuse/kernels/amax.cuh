#pragma once
/// \file kernels/amax.cuh
/// Tensor absolute maximum on the device (CUB block reduction + one atomic per CTA), and the
/// NVFP4 global encode scale derived from it, both written to device memory so that a following
/// `quantize` in the same stream (or CUDA graph) reads S without a host round trip.
///
/// NaN per `nan_policy` (nan_policy.cuh).
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
#include "fp4fuse/detail/amax_kernels.cuh"

namespace fp4fuse {

/// Writes max |x| over a row-major matrix to `*amax` (device memory), and, for
/// `global_scale::per_tensor{d_S}`, S = nvfp4_global_encode_scale(amax) to `*d_S`, where the
/// quantizers given the same descriptor read it (`global_scale::none`: the amax alone). NaN per
/// `NanPolicy` (`nan_policy::ignore`, the default, or `nan_policy::propagate`, which makes the
/// amax NaN and then S = 1); +-Inf gives amax Inf (and S = 1). Requirements: `in` 16-byte aligned,
/// `in.cols` and `in.ld` whole numbers of 16-byte vectors (8 bf16/half, 4 float), fewer than 2^30
/// vectors; `amax` (and S) 4-byte aligned. A memset and one or two kernels on `stream`; no host
/// synchronisation. Validated before any CUDA call; on error nothing is written.
/// \code
/// const fp4fuse::global_scale::per_tensor S{d_S};
/// auto r = fp4fuse::amax(fp4fuse::matrix_view<const __nv_bfloat16>{x, M, K, K}, d_amax, S, fp4fuse::nan_policy::ignore{}, stream);
/// // then fp4fuse::quantize(x, out, S, stream) reads S on the device
/// \endcode
template <class T, class Scale = detail::unnamed_global_scale, class NanPolicy = nan_policy::ignore>
result amax(const matrix_view<T>& in, float* amax, const Scale& scale, NanPolicy = {}, cudaStream_t stream = nullptr) {
  using E = cuda::std::remove_const_t<T>;
  static_assert(detail::is_supported_element<E>, "fp4fuse::amax: the input must be __nv_bfloat16, __half or float");
  static_assert(cuda::std::is_same_v<Scale, global_scale::none> || cuda::std::is_same_v<Scale, global_scale::per_tensor>,
                "fp4fuse::amax: the scale must be global_scale::per_tensor{d_S} (S written from the amax) or global_scale::none{}; "
                "per-row scales are computed by quantize and swiglu_quantize themselves");
  static_assert(cuda::std::is_same_v<NanPolicy, nan_policy::ignore> || cuda::std::is_same_v<NanPolicy, nan_policy::propagate>,
                "fp4fuse::amax: the option must be nan_policy::ignore{} or nan_policy::propagate{}");
  constexpr int V = detail::vec_elems<E>;
  argument_checker c("fp4fuse::amax");
  // 64-bit offsets in the kernel: no column bound beyond the vector count's below.
  c.matrix(in, "in", 0, V, V == 8 ? "16-byte vectors of 8 bf16/half elements" : "16-byte vectors of 4 floats",
           argument_checker::no_column_limit);
  c.not_null(amax, "amax");
  c.aligned(amax, 4, "amax", "a float");
  c.scale(scale);
  const cuda::std::int64_t vecs = in.rows * (in.cols / V);
  c.require(vecs < (cuda::std::int64_t(1) << 30), status::bad_shape, "in has %lld 16-byte vectors; at most 2^30 - 1 are supported",
            static_cast<long long>(vecs));
  if (!c) return c.outcome();
  // S is an output here: the descriptor's pointer is const for the readers.
  float* const global_encode_scale = const_cast<float*>(detail::scale_pointer(scale));
  constexpr const char* entry = "fp4fuse::amax";
  auto* kernel = &detail::amax_kernel<NanPolicy, E>;
  if (result r = check_kernel_image(kernel, entry); !r) return r;
  int device = 0, sms = 0;
  if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return cuda_failure(err, entry);
  if (const cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); err != cudaSuccess) {
    return cuda_failure(err, entry);
  }
  if (const cudaError_t err = cudaMemsetAsync(amax, 0, sizeof(float), stream); err != cudaSuccess) return cuda_failure(err, entry);
  if (vecs > 0) {
    const cuda::std::int64_t wanted = cuda::ceil_div(vecs, cuda::std::int64_t{detail::amax_threads});
    const int grid = static_cast<int>(wanted < sms * 8 ? wanted : sms * 8);
    kernel<<<grid, detail::amax_threads, 0, stream>>>(matrix_view<const E>{in.data, in.rows, in.cols, in.ld},
                                                      detail::fast_div(static_cast<cuda::std::uint32_t>(in.cols / V)),
                                                      static_cast<cuda::std::uint32_t>(vecs), reinterpret_cast<cuda::std::uint32_t*>(amax));
    if (result r = launch_result(entry); !r) return r;
  }
  if (global_encode_scale != nullptr) {
    return detail::launch(&detail::global_scale_kernel<>, 1, 1, stream, entry, static_cast<const float*>(amax), global_encode_scale);
  }
  return {};
}

}  // namespace fp4fuse
