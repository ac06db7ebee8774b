#pragma once
/// \file gate_up_layout.cuh
/// Where the gate and up columns of output column c live in a [M, 2I] gate/up row.
///
/// | tag                          | gate column          | up column                | used by                      |
/// |------------------------------|----------------------|--------------------------|------------------------------|
/// | `gate_up::split_gate_first`  | c                    | I + c                    | vLLM, flashinfer, SGLang     |
/// | `gate_up::split_up_first`    | I + c                | c                        | TensorRT-LLM CUTLASS MoE     |
/// | `gate_up::interleaved<G>`    | 2G*(c/G) + c%G       | 2G*(c/G) + G + c%G       | G=8: epilogue-friendly GEMM; G=1: GPT-OSS checkpoints |
///
/// With G = 8 every thread of an mma/wgmma accumulator fragment holds matching gate and up values.
#include "fp4fuse/config.cuh"

#include <cuda/std/cstdint>

namespace fp4fuse::gate_up {

struct split_gate_first {
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t gate_col(cuda::std::int64_t c, cuda::std::int64_t I) { return c; }
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t up_col(cuda::std::int64_t c, cuda::std::int64_t I) { return I + c; }
};

struct split_up_first {
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t gate_col(cuda::std::int64_t c, cuda::std::int64_t I) { return I + c; }
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t up_col(cuda::std::int64_t c, cuda::std::int64_t I) { return c; }
};

/// Granules of G gate columns followed by G up columns; G a power of two from 1 to 64.
template <int G>
struct interleaved {
  static_assert(G >= 1 && G <= 64 && (G & (G - 1)) == 0, "gate_up::interleaved<G>: G must be a power of two, 1..64");
  static constexpr int granule = G;
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t gate_col(cuda::std::int64_t c, cuda::std::int64_t) {
    return 2 * G * (c / G) + c % G;
  }
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t up_col(cuda::std::int64_t c, cuda::std::int64_t) {
    return 2 * G * (c / G) + G + c % G;
  }
};

}  // namespace fp4fuse::gate_up
