#pragma once
// What the benchmarks share: error checks, the L2-flushed median timer, a data filler.
#include <fp4fuse/fp4fuse.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK_CUDA(x)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
#define CHECK_FP4(x)                                                                               \
  do {                                                                                             \
    fp4fuse::result r_ = (x);                                                                      \
    if (!r_) {                                                                                     \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #x, r_.message());             \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace bench {

inline int g_reps = 50;
inline void* g_flush = nullptr;
constexpr std::size_t flush_bytes = std::size_t(256) << 20;

/// Median time in microseconds of `launch`, L2 flushed before each run.
inline double time_us(const std::function<void()>& launch) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < g_reps; ++i) {
    CHECK_CUDA(cudaMemsetAsync(g_flush, i & 0xFF, flush_bytes));
    CHECK_CUDA(cudaEventRecord(a));
    launch();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

__global__ void empty_kernel() {}

/// Fills p[0, n) with hashed values uniform in [-amplitude, amplitude) (steps of amplitude / 2^15).
__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float amplitude = 4.0f) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9E3779B9u ^ seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    p[i] = __float2bfloat16_rn((static_cast<float>(h & 0xFFFFu) - 32768.0f) * (amplitude / 32768.0f));
  }
}

}  // namespace bench
