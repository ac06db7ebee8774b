#pragma once
// Shared pieces of the standalone kernels: vector loads/stores of element types, argument
// validation and the kernel-image check. Not part of the public API.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse::detail {

template <class T>
inline constexpr bool is_supported_element =
    cuda::std::is_same_v<T, __nv_bfloat16> || cuda::std::is_same_v<T, __half> || cuda::std::is_same_v<T, float>;

/// Elements of T per 16-byte vector.
template <class T>
inline constexpr int vec_elems = 16 / static_cast<int>(sizeof(T));

FP4FUSE_HOST_DEVICE float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
FP4FUSE_HOST_DEVICE float to_float(__half v) { return __half2float(v); }
FP4FUSE_HOST_DEVICE float to_float(float v) { return v; }

template <class T>
FP4FUSE_HOST_DEVICE T from_float(float v);
template <>
FP4FUSE_HOST_DEVICE __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
FP4FUSE_HOST_DEVICE __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
FP4FUSE_HOST_DEVICE float from_float<float>(float v) { return v; }

// Cache hints for data each kernel touches exactly once (tuning knobs, not API): streaming
// (evict-first) loads and stores by default.
#if !defined(FP4FUSE_STREAMING_LOADS)
#  define FP4FUSE_STREAMING_LOADS 1
#endif
#if !defined(FP4FUSE_STREAMING_STORES)
#  define FP4FUSE_STREAMING_STORES 1
#endif
template <class V>
FP4FUSE_DEVICE V load_once(const V* p) {
#if FP4FUSE_STREAMING_LOADS
  return __ldcs(p);
#else
  return *p;
#endif
}
template <class V>
FP4FUSE_DEVICE void store_once(V* p, V v) {
#if FP4FUSE_STREAMING_STORES
  __stcs(p, v);
#else
  *p = v;
#endif
}

/// Unpacks one 32-bit word of two 16-bit elements (or one float) into floats.
FP4FUSE_DEVICE void unpack_word(cuda::std::uint32_t w, __nv_bfloat16, float* out) {
  out[0] = bits_float(w << 16);
  out[1] = bits_float(w & 0xFFFF0000u);
}
FP4FUSE_DEVICE void unpack_word(cuda::std::uint32_t w, __half, float* out) {
  __half2 h;
  memcpy(&h, &w, sizeof h);
  const float2 f = __half22float2(h);
  out[0] = f.x;
  out[1] = f.y;
}
FP4FUSE_DEVICE void unpack_word(cuda::std::uint32_t w, float, float* out) { out[0] = bits_float(w); }

/// Loads N contiguous elements (16-byte aligned, N * sizeof(T) a multiple of 16) as floats, with
/// read-once (streaming) cache hints.
template <class T, int N>
FP4FUSE_DEVICE void load_floats(const T* __restrict__ p, float (&out)[N]) {
  static_assert((N * sizeof(T)) % 16 == 0, "load_floats: whole 16-byte vectors only");
  constexpr int per_word = sizeof(T) == 2 ? 2 : 1;
  const uint4* v = reinterpret_cast<const uint4*>(p);
  FP4FUSE_UNROLL
  for (int i = 0; i < N / vec_elems<T>; ++i) {
    const uint4 raw = load_once(v + i);
    const cuda::std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    FP4FUSE_UNROLL
    for (int w = 0; w < 4; ++w) {
      unpack_word(words[w], T{}, &out[i * vec_elems<T> + w * per_word]);
    }
  }
}

/// Stores N floats (N * sizeof(T) a multiple of 16, 16-byte aligned) converted to T.
template <class T, int N>
FP4FUSE_DEVICE void store_floats(T* __restrict__ p, const float (&in)[N]) {
  static_assert((N * sizeof(T)) % 16 == 0, "store_floats: whole 16-byte vectors only");
  uint4* v = reinterpret_cast<uint4*>(p);
  FP4FUSE_UNROLL
  for (int i = 0; i < N / vec_elems<T>; ++i) {
    T tmp[vec_elems<T>];
    FP4FUSE_UNROLL
    for (int j = 0; j < vec_elems<T>; ++j) {
      tmp[j] = from_float<T>(in[i * vec_elems<T> + j]);
    }
    uint4 raw;
    memcpy(&raw, tmp, 16);
    store_once(v + i, raw);
  }
}

/// Stores a block's packed words: 2 words (8 bytes) for NVFP4, 4 (16 bytes) for MXFP4.
template <int Words>
FP4FUSE_DEVICE void store_words(cuda::std::uint8_t* __restrict__ p, const cuda::std::uint32_t (&w)[Words]) {
  if constexpr (Words == 2) {
    store_once(reinterpret_cast<uint2*>(p), make_uint2(w[0], w[1]));
  } else {
    static_assert(Words == 4, "store_words: 2 or 4 words");
    store_once(reinterpret_cast<uint4*>(p), make_uint4(w[0], w[1], w[2], w[3]));
  }
}

/// n / d for a divisor fixed at launch, without a hardware divide: with s = ceil(log2 d) and
/// m = floor(2^32 (2^s - d) / d) + 1, q = (umulhi(n, m) + n) >> s, exact for every n < 2^31
/// (launchers keep grids below that, so the sum cannot overflow).
struct fast_divmod {
  cuda::std::uint32_t divisor = 1;
  cuda::std::uint32_t multiplier = 1;
  cuda::std::uint32_t shift = 0;

  fast_divmod() = default;
  explicit fast_divmod(cuda::std::uint32_t d) : divisor(d) {
    while ((cuda::std::uint64_t(1) << shift) < d) ++shift;
    multiplier = static_cast<cuda::std::uint32_t>(((cuda::std::uint64_t(1) << 32) * ((cuda::std::uint64_t(1) << shift) - d)) / d + 1);
  }
  FP4FUSE_HOST_DEVICE cuda::std::uint32_t div(cuda::std::uint32_t n) const {
#if FP4FUSE_DEVICE_PASS
    return (__umulhi(n, multiplier) + n) >> shift;
#else
    return static_cast<cuda::std::uint32_t>((((cuda::std::uint64_t(n) * multiplier) >> 32) + n) >> shift);
#endif
  }
};

inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

/// ok when the current device has an image of `kernel` in this build.
template <class Kernel>
inline result check_kernel_image(Kernel* kernel) {
  cudaFuncAttributes attributes{};
  const cudaError_t err = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
  if (err == cudaSuccess) {
    return {};
  }
  (void)cudaGetLastError();  // the query's error is ours, not the caller's
  if (err == cudaErrorInvalidDeviceFunction || err == cudaErrorNoKernelImageForDevice) {
    return {status::unsupported_architecture, err};
  }
  return {status::cuda_error, err};
}

/// After a launch: ok, or the launch's CUDA error.
inline result launch_result() {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? result{} : result{status::cuda_error, err};
}

}  // namespace fp4fuse::detail
