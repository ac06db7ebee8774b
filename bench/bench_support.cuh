#pragma once
// What the benchmarks share: error checks, the L2-flushed round-robin median timer, a data filler.
#include <fp4fuse/fp4fuse.cuh>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
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

/// Reads `words` 16-byte words and writes nothing (unless `sink` is reached by an all-ones word,
/// which the flush buffer never holds): evicts L2 and leaves it holding clean lines only.
__global__ void read_kernel(const uint4* p, std::size_t words, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcs(p + i);
    acc |= v.x & v.y & v.z & v.w;
  }
  if (acc == 0xFFFFFFFFu) *sink = acc;
}

/// Reads `bytes` (a multiple of 16) of `p` on the current stream, 4 blocks per SM.
inline void read_bytes(const void* p, std::size_t bytes) {
  static const int sms = [] {
    int device = 0, count = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  read_kernel<<<4 * sms, 512>>>(static_cast<const uint4*>(p), bytes / 16, static_cast<unsigned*>(g_flush));
  CHECK_CUDA(cudaGetLastError());  // a host-side query: no synchronization inside the timed loops
}

/// Evicts L2 before a timed launch by reading 256 MiB. A memset would leave L2 full of dirty lines
/// whose write-back then competes with the timed kernel for DRAM bandwidth (about 50 MB: as much as
/// the decode GEMM's own reads); after a read the lines are clean and are dropped for free.
inline void flush_l2() {
  static const bool zeroed = [] {
    CHECK_CUDA(cudaMemset(g_flush, 0, flush_bytes));
    return true;
  }();
  (void)zeroed;
  read_bytes(g_flush, flush_bytes);
}

/// Medians in microseconds of each of `launches`, timed round-robin: every repetition runs each
/// launch once, L2 flushed before each, so that the GPU's clock and power state drift over the run
/// spreads evenly over the launches compared instead of favouring the ones timed first.
inline std::vector<double> time_round_robin(const std::vector<std::function<void()>>& launches) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (const auto& launch : launches) {
    for (int i = 0; i < 3; ++i) launch();
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<std::vector<float>> t(launches.size());
  for (int i = 0; i < g_reps; ++i) {
    for (std::size_t j = 0; j < launches.size(); ++j) {
      flush_l2();
      CHECK_CUDA(cudaEventRecord(a));
      launches[j]();
      CHECK_CUDA(cudaEventRecord(b));
      CHECK_CUDA(cudaEventSynchronize(b));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
      t[j].push_back(ms * 1000.0f);
    }
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::vector<double> medians;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    medians.push_back(v[v.size() / 2]);
  }
  return medians;
}

/// Median time in microseconds of `launch`, L2 flushed before each run.
inline double time_us(const std::function<void()>& launch) { return time_round_robin({launch})[0]; }

/// Host time in microseconds to enqueue one `launch` (mean of 64 after warm-up, GPU not waited
/// for): if it approaches the flush's duration the GPU idles inside the timed interval.
inline double enqueue_us(const std::function<void()>& launch) {
  for (int i = 0; i < 3; ++i) launch();
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) launch();
  const auto t1 = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / 64;
}

/// True when a CUDA device is present; else says so for benchmark `name` (nothing to measure).
inline bool have_device(const char* name) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("%s: no CUDA device; nothing to measure\n", name);
    return false;
  }
  return true;
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

/// The value after argv[i] (the option `argv[i]`), advancing i; exits with a sentence when there is none.
inline const char* option_value(int argc, char** argv, int& i) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s needs a value\n", argv[i]);
    std::exit(2);
  }
  return argv[++i];
}

}  // namespace bench
