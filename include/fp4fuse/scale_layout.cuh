#pragma once
/// \file scale_layout.cuh
/// Where block scale (row m, scale column k) lives in the scale tensor. A layout is a small value
/// type built from the logical shape: `rows` (M) and `scale_cols` (K / block size).
///
/// `scale_layout::linear`: row-major [M][K/16], no padding.
///
/// `scale_layout::swizzled_128x4` (cuBLASLt `VEC16_UE4M3`, CUTLASS block-scaled GEMMs, tcgen05):
/// rows padded to M' = round_up(M, 128), scale columns to K' = round_up(K/16, 4); the tensor is
/// [M'/128][K'/4][32][4][4] bytes, one 512-byte tile per 128 rows x 4 scale columns:
/// \verbatim
///   offset(m, k) = (m / 128) * (K' / 4) * 512      which 128-row band
///                + (k / 4) * 512                   which 4-column tile within the band
///                + (m % 32) * 16                   row within a 32-row group: 16-byte line
///                + ((m % 128) / 32) * 4            which of the 4 row groups: 4-byte word
///                + (k % 4)                         scale column within the tile: byte
///
///   one 512-byte tile (rows m0..m0+127, scale columns k0..k0+3):
///   byte  0..3   : rows m0+0  , cols k0..k0+3      byte  4..7  : rows m0+32 , cols k0..k0+3
///   byte  8..11  : rows m0+64 , cols k0..k0+3      byte 12..15 : rows m0+96 , cols k0..k0+3
///   byte 16..31  : the same for rows m0+1, m0+33, m0+65, m0+97
///   ...
///   byte 496..511: rows m0+31, m0+63, m0+95, m0+127
/// \endverbatim
/// Positions with m >= M or k >= K/16 are padding and must hold 0x00: a GEMM reads them.
#include "fp4fuse/config.cuh"

#include <cuda/cmath>
#include <cuda/std/cstdint>

namespace fp4fuse::scale_layout {

/// Row-major [rows][scale_cols] scale tensor.
/// \code
/// fp4fuse::scale_layout::linear layout{M, K / 16};
/// std::vector<uint8_t> scales(layout.size_bytes());
/// scales[layout.offset(m, k / 16)] = sf;
/// \endcode
struct linear {
  /// M, the rows of the quantized matrix.
  cuda::std::int64_t rows;
  /// K / block size (16 NVFP4, 32 MXFP4): scale columns per row.
  cuda::std::int64_t scale_cols;

  /// Rows of the scale tensor: `rows` (no padding).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_rows() const { return rows; }
  /// Columns of the scale tensor: `scale_cols` (no padding).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_cols() const { return scale_cols; }
  /// Bytes the scale tensor occupies.
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t size_bytes() const { return rows * scale_cols; }
  /// Byte offset of scale (row, scale_col). Precondition: row < rows, scale_col < scale_cols.
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t offset(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    return row_offset(row) + col_offset(scale_col);
  }
  /// The row's part of `offset`: offset(row, k) == row_offset(row) + col_offset(k) for every row
  /// and k (an epilogue computes the row part once per row).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t row_offset(cuda::std::int64_t row) const { return row * scale_cols; }
  /// The scale column's part of `offset` (see `row_offset`).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t col_offset(cuda::std::int64_t scale_col) const { return scale_col; }
  /// Always false: this layout has no padding.
  FP4FUSE_HOST_DEVICE constexpr bool is_padding(cuda::std::int64_t, cuda::std::int64_t) const { return false; }
};

/// The 128x4 swizzled layout of cuBLASLt/CUTLASS (see the file comment for the picture).
/// \code
/// fp4fuse::scale_layout::swizzled_128x4 layout{M, K / 16};
/// cudaMalloc(&scales, layout.size_bytes());  // M' * K' bytes, padding included
/// \endcode
struct swizzled_128x4 {
  /// M, the rows of the quantized matrix (unpadded).
  cuda::std::int64_t rows;
  /// K / block size (16 NVFP4, 32 MXFP4): scale columns per row (unpadded).
  cuda::std::int64_t scale_cols;

  /// Rows per tile: `rows` is padded to a multiple of 128.
  static constexpr cuda::std::int64_t row_tile = 128;
  /// Scale columns per tile: `scale_cols` is padded to a multiple of 4.
  static constexpr cuda::std::int64_t col_tile = 4;

  /// M' = round_up(rows, 128).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_rows() const {
    return cuda::round_up(rows, row_tile);
  }
  /// K' = round_up(scale_cols, 4).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_cols() const {
    return cuda::round_up(scale_cols, col_tile);
  }
  /// M' * K' bytes.
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t size_bytes() const { return padded_rows() * padded_cols(); }
  /// Byte offset of (row, scale_col), valid for the padded range 0 <= row < M', 0 <= scale_col < K'.
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t offset(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    return row_offset(row) + col_offset(scale_col);
  }
  /// The row's part of `offset`: offset(row, k) == row_offset(row) + col_offset(k) for every row
  /// and k in the padded range (an epilogue computes the row part once per row).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t row_offset(cuda::std::int64_t row) const {
    // Unsigned: positions are non-negative, and unsigned / and % by powers of two are single shifts
    // and masks (signed ones need a rounding fix-up).
    const auto r = static_cast<cuda::std::uint64_t>(row);
    return static_cast<cuda::std::int64_t>((r / 128) * static_cast<cuda::std::uint64_t>(padded_cols() / 4) * 512 +
                                            (r % 32) * 16 + ((r % 128) / 32) * 4);
  }
  /// The scale column's part of `offset` (see `row_offset`).
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t col_offset(cuda::std::int64_t scale_col) const {
    const auto k = static_cast<cuda::std::uint64_t>(scale_col);
    return static_cast<cuda::std::int64_t>((k / 4) * 512 + (k % 4));
  }
  /// True where (row, scale_col) lies in the padding (row >= rows or scale_col >= scale_cols).
  FP4FUSE_HOST_DEVICE constexpr bool is_padding(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    return row >= rows || scale_col >= scale_cols;
  }
};

}  // namespace fp4fuse::scale_layout
