#pragma once
// Vector memory access of the standalone kernels: the element types, conversions to and from
// float, streaming 16-byte loads and stores, and the one vector store of a block's packed words
// (shared with the epilogues' direct sink). Not part of the public API.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

namespace fp4fuse::detail {

template <class T>
inline constexpr bool is_supported_element =
    cuda::std::is_same_v<T, __nv_bfloat16> || cuda::std::is_same_v<T, __half> || cuda::std::is_same_v<T, float>;

template <class T>
constexpr const char* element_name() {
  return cuda::std::is_same_v<T, __nv_bfloat16> ? "bf16" : cuda::std::is_same_v<T, __half> ? "half" : "float";
}

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

// Every standalone kernel touches its data exactly once: streaming (evict-first) loads and stores.
template <class V>
FP4FUSE_DEVICE V load_once(const V* p) {
  return __ldcs(p);
}
template <class V>
FP4FUSE_DEVICE void store_once(V* p, V v) {
  __stcs(p, v);
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

/// Stores a block's packed words with one vector store: 2 words (8 bytes) for NVFP4, 4 (16 bytes)
/// for MXFP4. `Streaming`: with the standalone kernels' evict-first hint on the device (the host
/// stores plainly); otherwise a plain store (the epilogues' direct sink, host twins included).
template <bool Streaming, int Words>
FP4FUSE_HOST_DEVICE void store_block_words(cuda::std::uint8_t* __restrict__ p, const cuda::std::uint32_t (&w)[Words]) {
  static_assert(Words == 2 || Words == 4, "a block is 2 (NVFP4) or 4 (MXFP4) words");
  using vector = cuda::std::conditional_t<Words == 2, uint2, uint4>;
  vector v;
  if constexpr (Words == 2) {
    v = make_uint2(w[0], w[1]);
  } else {
    v = make_uint4(w[0], w[1], w[2], w[3]);
  }
  if constexpr (Streaming) {
#if FP4FUSE_DEVICE_PASS
    store_once(reinterpret_cast<vector*>(p), v);
#else
    *reinterpret_cast<vector*>(p) = v;  // the hint is device-only: the host stores plainly
#endif
  } else {
    *reinterpret_cast<vector*>(p) = v;
  }
}

}  // namespace fp4fuse::detail
