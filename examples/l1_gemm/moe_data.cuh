#pragma once
// The data of the MoE L1 example, its tests and its benchmark: the models' shapes, routings
// (uniform and skewed) as expert offsets, and inputs drawn from a counter-based hash, so the
// device fills tens of gigabytes of weights in milliseconds and the host recomputes any element
// it checks without storing them.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace l1_gemm::moe {

/// An MoE layer's L1: E experts, top-k routing, hidden size H, intermediate size I (W_e is
/// [2I, H], gate/up interleaved by 8), and GPT-OSS's bias and clamped SwiGLU.
struct model {
  const char* name;
  int experts, top_k, hidden, inter;
  bool bias;  ///< GPT-OSS: a bias [E, 2I] and activation::swiglu_clamped; else SwiGLU, no bias
};
inline constexpr model deepseek_v3{"DeepSeek-V3", 256, 8, 7168, 2048, false};
inline constexpr model gpt_oss_120b{"GPT-OSS-120B", 128, 4, 2880, 2880, true};

/// How tokens pick experts: `uniform`, k distinct experts uniformly at random; `skewed`, as uniform
/// but expert 0 is one of a token's k experts with probability 1/2 (so it gets about half of the
/// tokens, T / 2 rows: the hot expert of an unbalanced batch); `balanced`, every expert gets
/// T * k / E rows (the remainder one more each to the first experts): no expert ends inside a tile
/// that a uniform routing would leave mostly empty (a bound, not a routing a model produces).
enum class routing { uniform, skewed, balanced };

inline const char* routing_name(routing r) {
  return r == routing::uniform ? "uniform" : r == routing::skewed ? "skewed" : "balanced";
}

/// Rows per expert for T tokens routed top-k among E experts.
inline std::vector<std::int32_t> route(int T, int E, int k, routing r, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::int32_t> counts(static_cast<std::size_t>(E), 0);
  if (r == routing::balanced) {
    const std::int64_t rows = static_cast<std::int64_t>(T) * k;
    for (int e = 0; e < E; ++e) counts[static_cast<std::size_t>(e)] = static_cast<std::int32_t>(rows / E + (e < rows % E ? 1 : 0));
    return counts;
  }
  std::vector<int> picked;
  for (int t = 0; t < T; ++t) {
    picked.clear();
    if (r == routing::skewed && (g() & 1)) picked.push_back(0);
    while (static_cast<int>(picked.size()) < k) {
      const int e = static_cast<int>(g() % static_cast<std::uint64_t>(E));
      if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
    }
    for (int e : picked) ++counts[static_cast<std::size_t>(e)];
  }
  return counts;
}

/// expert_offsets[E + 1]: prefix sums of the counts (expert e owns rows [offsets[e], offsets[e+1])).
inline std::vector<std::int32_t> offsets_of(const std::vector<std::int32_t>& counts) {
  std::vector<std::int32_t> offsets(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), offsets.begin() + 1);
  return offsets;
}

/// A uniform value in [-1, 1) from (seed, index): splitmix64 of the pair, 24 random bits.
__host__ __device__ inline float hashed_uniform(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<std::int32_t>(z >> 40) - (1 << 23)) * (1.0f / (1 << 23));
}

/// The inputs' values: X [rows, H] uniform in [-1, 1), W [E, 2I, H] uniform / sqrt(H), bias
/// [E, 2I] uniform * 0.5, as bf16 (X, W) and float (bias).
struct values {
  std::uint64_t seed;
  int hidden;
  __host__ __device__ __nv_bfloat16 x(std::uint64_t i) const { return __float2bfloat16_rn(hashed_uniform(seed, i)); }
  __host__ __device__ __nv_bfloat16 w(std::uint64_t i) const {
    return __float2bfloat16_rn(hashed_uniform(seed ^ 0x5DEECE66Dull, i) * rsqrt_hidden());
  }
  __host__ __device__ float bias(std::uint64_t i) const { return 0.5f * hashed_uniform(seed ^ 0xB1A5ull, i); }
  __host__ __device__ float rsqrt_hidden() const { return 1.0f / sqrtf(static_cast<float>(hidden)); }
};

/// Writes element i of the array `which` (0: X, 1: W as bf16; 2: bias as float).
struct fill {
  void* dst;
  values v;
  int which;
  __device__ void operator()(std::uint64_t i) const {
    if (which == 0) static_cast<__nv_bfloat16*>(dst)[i] = v.x(i);
    else if (which == 1) static_cast<__nv_bfloat16*>(dst)[i] = v.w(i);
    else static_cast<float*>(dst)[i] = v.bias(i);
  }
};

template <int = 0>
__global__ void fill_kernel(std::uint64_t n, fill f) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n; i += std::uint64_t(gridDim.x) * blockDim.x) {
    f(i);
  }
}

/// Fills `n` elements on `stream` with `v.x` / `v.w` / `v.bias` (which: 0, 1, 2).
inline cudaError_t fill_device(void* dst, std::uint64_t n, const values& v, int which, cudaStream_t stream = nullptr) {
  fill_kernel<<<2048, 256, 0, stream>>>(n, fill{dst, v, which});
  return cudaGetLastError();
}

}  // namespace l1_gemm::moe
