#pragma once
// Device-vs-host harness: run a unary bit-pattern function on the GPU and on the host over the
// same inputs and report the first mismatches. Also an on-device exhaustive comparison of two
// device functions over all 2^32 float bit patterns.
#include "test_support.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fp4fuse_test {

template <class Op>
__global__ void apply_op_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out, std::size_t n,
                                Op op) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = op(in[i]);
  }
}

/// Runs `op` (a functor with `__host__ __device__ uint32_t operator()(uint32_t) const`) on the
/// device over `inputs` and compares each result with the same functor run on the host.
/// Output is poisoned with 0xA5A5A5A5 before the launch. Returns the mismatch count.
template <class Op>
std::size_t device_matches_host(const std::vector<std::uint32_t>& inputs, Op op, const char* what) {
  const std::size_t n = inputs.size();
  std::uint32_t* d_in = nullptr;
  std::uint32_t* d_out = nullptr;
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_in, n * sizeof(std::uint32_t)));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_out, n * sizeof(std::uint32_t)));
  FP4FUSE_TEST_CUDA(cudaMemcpy(d_in, inputs.data(), n * 4, cudaMemcpyHostToDevice));
  FP4FUSE_TEST_CUDA(cudaMemset(d_out, 0xA5, n * 4));
  apply_op_kernel<<<1024, 256>>>(d_in, d_out, n, op);
  FP4FUSE_TEST_LAUNCHED();
  std::vector<std::uint32_t> got(n);
  FP4FUSE_TEST_CUDA(cudaMemcpy(got.data(), d_out, n * 4, cudaMemcpyDeviceToHost));
  FP4FUSE_TEST_CUDA(cudaFree(d_in));
  FP4FUSE_TEST_CUDA(cudaFree(d_out));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = op(inputs[i]);
    if (got[i] != want) {
      if (bad < 5) {
        UNSCOPED_INFO(what << ": input " << hex32(inputs[i]) << " device " << hex32(got[i]) << " host " << hex32(want));
      }
      ++bad;
    }
  }
  return bad;
}

/// 10^9 random bit patterns in chunks, device vs host.
template <class Op>
std::size_t device_matches_host_random(Op op, const char* what, std::size_t total = 1000000000ull) {
  auto g = rng(what);
  constexpr std::size_t chunk = std::size_t(1) << 26;
  std::vector<std::uint32_t> inputs;
  std::size_t bad = 0;
  for (std::size_t done = 0; done < total; done += chunk) {
    const std::size_t n = std::min(chunk, total - done);
    inputs.resize(n);
    for (auto& v : inputs) {
      v = static_cast<std::uint32_t>(g());
    }
    bad += device_matches_host(inputs, op, what);
  }
  return bad;
}

template <class OpA, class OpB>
__global__ void compare_all_floats_kernel(OpA a, OpB b, unsigned long long* mismatches, std::uint32_t* first) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < (std::uint64_t(1) << 32); i += stride) {
    const std::uint32_t u = static_cast<std::uint32_t>(i);
    if (a(u) != b(u)) {
      if (local == 0) {
        atomicMin(first, u);
      }
      ++local;
    }
  }
  if (local) {
    atomicAdd(mismatches, local);
  }
}

/// Compares two device functors on all 2^32 float bit patterns, on the device.
template <class OpA, class OpB>
unsigned long long device_all_floats_agree(OpA a, OpB b, std::uint32_t* first_mismatch) {
  unsigned long long* d_count = nullptr;
  std::uint32_t* d_first = nullptr;
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_count, sizeof(unsigned long long)));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_first, sizeof(std::uint32_t)));
  FP4FUSE_TEST_CUDA(cudaMemset(d_count, 0, sizeof(unsigned long long)));
  FP4FUSE_TEST_CUDA(cudaMemset(d_first, 0xFF, sizeof(std::uint32_t)));
  compare_all_floats_kernel<<<4096, 256>>>(a, b, d_count, d_first);
  FP4FUSE_TEST_LAUNCHED();
  unsigned long long count = 0;
  FP4FUSE_TEST_CUDA(cudaMemcpy(&count, d_count, sizeof count, cudaMemcpyDeviceToHost));
  FP4FUSE_TEST_CUDA(cudaMemcpy(first_mismatch, d_first, sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  FP4FUSE_TEST_CUDA(cudaFree(d_count));
  FP4FUSE_TEST_CUDA(cudaFree(d_first));
  return count;
}

/// All 2^16 bfloat16 values as float bit patterns.
inline std::vector<std::uint32_t> all_bfloat16_as_float_bits() {
  std::vector<std::uint32_t> v(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    v[i] = i << 16;
  }
  return v;
}

}  // namespace fp4fuse_test
