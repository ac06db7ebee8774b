#pragma once
// The split-K workspace of the sm_90a GEMM: the partial fragments of every split of a tile and the
// tiles' arrival counters.
#include <cuda_runtime_api.h>

#include <cstddef>

#include <fp4fuse/status.hpp>

namespace l1_gemm::sm90 {

/// The split-K workspace of one device: grown on demand, counters zeroed on `stream` when
/// allocated (the kernel leaves them zero). Shared by all launches on that device: launches that
/// split K must not run concurrently, and an aborted one leaves the counters undefined.
struct workspace {
  float* partials = nullptr;
  unsigned* counters = nullptr;
  std::size_t partial_floats = 0, counter_count = 0;
};
inline fp4fuse::result reserve_workspace(workspace& ws, std::size_t floats, std::size_t counters, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  if (floats > ws.partial_floats) {
    if (ws.partials != nullptr) cudaFree(ws.partials);
    ws.partials = nullptr;
    ws.partial_floats = 0;
    if ((err = cudaMalloc(&ws.partials, floats * sizeof(float))) != cudaSuccess) return {fp4fuse::status::cuda_error, err};
    ws.partial_floats = floats;
  }
  if (counters > ws.counter_count) {
    if (ws.counters != nullptr) cudaFree(ws.counters);
    ws.counters = nullptr;
    ws.counter_count = 0;
    if ((err = cudaMalloc(&ws.counters, counters * sizeof(unsigned))) != cudaSuccess) return {fp4fuse::status::cuda_error, err};
    if ((err = cudaMemsetAsync(ws.counters, 0, counters * sizeof(unsigned), stream)) != cudaSuccess) {
      return {fp4fuse::status::cuda_error, err};
    }
    ws.counter_count = counters;
  }
  return {};
}

}  // namespace l1_gemm::sm90
