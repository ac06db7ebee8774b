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
/// `gate_up::separate` is a source, not a column layout: gate and up in two accumulators (a GEMM
/// with two B operands, or the two halves of a split one), taken by the row epilogue; the fragment
/// epilogues take it after `interleave_gate_up` (epilogue/swiglu_quantize.cuh).
#include "fp4fuse/config.cuh"

#include <cuda/std/cstdint>

namespace fp4fuse::gate_up {

/// Gate half first: output column c reads gate column c and up column I + c.
/// \code
/// static_assert(fp4fuse::gate_up::split_gate_first::up_col(3, 512) == 515);
/// \endcode
struct split_gate_first {
  /// Input column of output column c's gate value: c.
  /// \code
  /// static_assert(fp4fuse::gate_up::split_gate_first::gate_col(3, 512) == 3);
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t gate_col(cuda::std::int64_t c, cuda::std::int64_t /*I*/) { return c; }
  /// Input column of output column c's up value: I + c.
  /// \code
  /// static_assert(fp4fuse::gate_up::split_gate_first::up_col(0, 2880) == 2880);  // GPT-OSS's I = 2880
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t up_col(cuda::std::int64_t c, cuda::std::int64_t I) { return I + c; }
};

/// Up half first: output column c reads gate column I + c and up column c.
struct split_up_first {
  /// Input column of output column c's gate value: I + c.
  /// \code
  /// static_assert(fp4fuse::gate_up::split_up_first::gate_col(3, 512) == 515);
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t gate_col(cuda::std::int64_t c, cuda::std::int64_t I) { return I + c; }
  /// Input column of output column c's up value: c.
  /// \code
  /// static_assert(fp4fuse::gate_up::split_up_first::up_col(3, 512) == 3);
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t up_col(cuda::std::int64_t c, cuda::std::int64_t /*I*/) { return c; }
};

/// Granules of G gate columns followed by G up columns; G a power of two from 1 to 64.
template <int G>
struct interleaved {
  static_assert(G >= 1 && G <= 64 && (G & (G - 1)) == 0, "gate_up::interleaved<G>: G must be a power of two, 1..64");
  /// G, the width of a gate or up granule in columns.
  static constexpr int granule = G;
  /// Input column of output column c's gate value: 2G*(c/G) + c%G (I is not used).
  /// \code
  /// static_assert(fp4fuse::gate_up::interleaved<8>::gate_col(9, 0) == 17);
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t gate_col(cuda::std::int64_t c, cuda::std::int64_t) {
    return 2 * G * (c / G) + c % G;
  }
  /// Input column of output column c's up value: 2G*(c/G) + G + c%G (I is not used).
  /// \code
  /// static_assert(fp4fuse::gate_up::interleaved<8>::up_col(9, 0) == 25);  // granule 1's up half: 16 + 8 + 1
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t up_col(cuda::std::int64_t c, cuda::std::int64_t) {
    return 2 * G * (c / G) + G + c % G;
  }
};

/// Gate and up in separate accumulators, column c of each the gate and the up value of output
/// column c: the epilogues' source tag for `row_epilogue(op, gate, up, origin)` (epilogue/row.cuh).
/// The standalone kernels take one [M, 2I] matrix and do not accept it.
/// \code
/// static_assert(!fp4fuse::gate_up::is_interleaved<fp4fuse::gate_up::separate>);
/// \endcode
struct separate {};

/// True for `interleaved<G>`.
template <class T>
inline constexpr bool is_interleaved = false;
/// `is_interleaved` of `interleaved<G>`.
template <int G>
inline constexpr bool is_interleaved<interleaved<G>> = true;

}  // namespace fp4fuse::gate_up
