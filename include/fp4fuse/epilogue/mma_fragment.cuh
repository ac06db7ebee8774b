#pragma once
/// \file epilogue/mma_fragment.cuh
/// Where each register of a thread's `mma.sync` accumulator fragment sits in the output tile.
///
/// `mma.sync.aligned.m16n8k16` (and m16n8k8, m16n8k32) with f32 accumulators: each of the 32 lanes
/// holds four floats c0..c3 of the 16 x 8 tile D:
/// \verbatim
///   row(lane, r) = lane / 4 + 8 * (r / 2)        (groupID, +8 for c2, c3)
///   col(lane, r) = (lane % 4) * 2 + r % 2        (threadID_in_group * 2, +1 for c1, c3)
///
///           col 0,1   col 2,3   col 4,5   col 6,7
///   row 0   T0 c0,c1  T1 c0,c1  T2 c0,c1  T3 c0,c1
///   row 1   T4        T5        T6        T7
///   ...
///   row 7   T28       T29       T30       T31
///   row 8   T0 c2,c3  T1 c2,c3  T2 c2,c3  T3 c2,c3
///   ...
///   row 15  T28 c2,c3 ...
/// \endverbatim
/// With gate/up columns interleaved in granules of 8 (`gate_up::interleaved<8>`), n8 tile 2g holds
/// gate granule g and tile 2g + 1 the matching up granule: every thread holds matching gate and up
/// values in the same register of two neighbouring tiles.
#include "fp4fuse/config.cuh"

namespace fp4fuse {

/// The register-to-element map of an `mma.sync` m16n8 f32 accumulator fragment.
/// \code
/// static_assert(fp4fuse::mma_m16n8_f32_fragment::row(5, 2) == 9);
/// static_assert(fp4fuse::mma_m16n8_f32_fragment::col(5, 3) == 3);
/// \endcode
struct mma_m16n8_f32_fragment {
  /// Rows of the tile.
  static constexpr int rows = 16;
  /// Columns of the tile.
  static constexpr int cols = 8;
  /// Accumulator registers per thread.
  static constexpr int registers = 4;
  /// Row of register `reg` (0..3) of lane `lane` (0..31).
  /// \code
  /// static_assert(fp4fuse::mma_m16n8_f32_fragment::row(31, 3) == 15);  // lane 31's c3: the tile's last row
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int row(int lane, int reg) { return lane / 4 + 8 * (reg / 2); }
  /// Column of register `reg` (0..3) of lane `lane` (0..31).
  /// \code
  /// static_assert(fp4fuse::mma_m16n8_f32_fragment::col(31, 3) == 7);  // lane 31's c3: the tile's last column
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int col(int lane, int reg) { return (lane % 4) * 2 + reg % 2; }
};

}  // namespace fp4fuse
