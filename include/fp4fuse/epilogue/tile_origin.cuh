#pragma once
/// \file epilogue/tile_origin.cuh
/// `tile_origin`: where an accumulator tile sits in the GEMM's output, in the one coordinate
/// system the epilogues take: the row, and the column of the [M, 2I] gate/up accumulator matrix
/// (not of the [M, I] activation output, which is half as wide).
/// \code
/// const fp4fuse::tile_origin origin{m0, n0};  // a 64 x 256 wgmma tile at GEMM row m0, gate/up column n0
/// \endcode
#include <cuda/std/cstdint>

#include "fp4fuse/config.cuh"

namespace fp4fuse {

/// The first row and the first gate/up column of an accumulator tile in the GEMM output
/// D = X W^T ([M, 2I], gate and up interleaved by the GEMM's gate/up layout).
struct tile_origin {
  /// Output row of the tile's row 0.
  cuda::std::int64_t row;
  /// Gate/up (accumulator) column of the tile's column 0.
  cuda::std::int64_t gate_up_col;
};

}  // namespace fp4fuse
