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
///
/// `scale_layout::grouped_swizzled_128x4<ExpertStart>`: the scales of a grouped (MoE) activation
/// [rows, K] whose rows are sorted by expert (`expert_offsets[E + 1]`, prefix sums of the routing
/// counts): each expert's scales form their own 128x4 swizzled block, padded to whole 128-row
/// bands, starting at a 128-row boundary; the two peers' conventions for where expert e starts:
/// \verbatim
///   scale rows (each band = 128 rows x K' scale columns, swizzled as above)
///   padded_prefix_sum (vLLM blockscale_offsets):      offset_bound (TensorRT-LLM, flashinfer):
///     start_e = sum_{i<e} round_up(count_i, 128)        start_e = round_up(offset_e + 127 e, 128)
///   +--------------------+ 0                          +--------------------+ 0
///   | expert 0: 130 rows | 130 data + 126 pad         | expert 0: 130 rows |
///   |                    |                            |                    |
///   +--------------------+ 256                        +--------------------+ 256
///   | expert 1: 0 rows   | (no band)                  | gap                | 256 .. 384: no expert
///   +--------------------+ 256                        +--------------------+ 384
///   | expert 2: 5 rows   | 5 data + 123 pad           | expert 2: 5 rows   |
///   +--------------------+ 384                        +--------------------+ 512
///   | tail up to padded_rows(): no expert             | tail up to padded_rows()
/// \endverbatim
/// offset_bound leaves a gap wherever the bound runs past the previous band, after a non-empty
/// expert too (counts {128, 5}: expert 1 starts at row 256). Both fit in
/// padded_rows() = round_up(rows + 127 E, 128) rows for any routing (start_{e+1} >=
/// start_e + round_up(count_e, 128) in both conventions), so the allocation is data-independent
/// (CUDA graphs). Every byte that is not a scale of a routed row is padding and holds 0x00:
/// expert padding, gaps and the tail.
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/cmath.cuh"

#include <cuda/cmath>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

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
  /// \code
  /// static_assert(fp4fuse::scale_layout::linear{100, 5}.padded_rows() == 100);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_rows() const { return rows; }
  /// Columns of the scale tensor: `scale_cols` (no padding).
  /// \code
  /// static_assert(fp4fuse::scale_layout::linear{100, 5}.padded_cols() == 5);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_cols() const { return scale_cols; }
  /// Bytes the scale tensor occupies.
  /// \code
  /// static_assert(fp4fuse::scale_layout::linear{100, 5}.size_bytes() == 500);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t size_bytes() const { return rows * scale_cols; }
  /// Byte offset of scale (row, scale_col). Precondition: row < rows, scale_col < scale_cols.
  /// \code
  /// static_assert(fp4fuse::scale_layout::linear{100, 5}.offset(2, 3) == 13);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t offset(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    return row_offset(row) + col_offset(scale_col);
  }
  /// The row's part of `offset`: offset(row, k) == row_offset(row) + col_offset(k) for every row
  /// and k (an epilogue computes the row part once per row).
  /// \code
  /// static_assert(fp4fuse::scale_layout::linear{100, 5}.row_offset(2) == 10);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t row_offset(cuda::std::int64_t row) const { return row * scale_cols; }
  /// The scale column's part of `offset` (see `row_offset`).
  /// \code
  /// static_assert(fp4fuse::scale_layout::linear{100, 5}.col_offset(3) == 3);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t col_offset(cuda::std::int64_t scale_col) const { return scale_col; }
  /// Always false: this layout has no padding.
  /// \code
  /// static_assert(!fp4fuse::scale_layout::linear{100, 5}.is_padding(99, 4));
  /// \endcode
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
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{100, 5}.padded_rows() == 128);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_rows() const {
    return fp4fuse::detail::round_up(rows, row_tile);
  }
  /// K' = round_up(scale_cols, 4).
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{100, 5}.padded_cols() == 8);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_cols() const {
    return fp4fuse::detail::round_up(scale_cols, col_tile);
  }
  /// M' * K' bytes.
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{100, 5}.size_bytes() == 1024);  // two 512-byte tiles
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t size_bytes() const { return padded_rows() * padded_cols(); }
  /// Byte offset of (row, scale_col), valid for the padded range 0 <= row < M', 0 <= scale_col < K'.
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{128, 16}.offset(33, 5) == 533);  // tile 1 (512) + line 1 (16) + group 1 (4) + column 1
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t offset(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    return row_offset(row) + col_offset(scale_col);
  }
  /// The row's part of `offset`: offset(row, k) == row_offset(row) + col_offset(k) for every row
  /// and k in the padded range (an epilogue computes the row part once per row).
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{128, 16}.row_offset(33) == 20);  // line 1 (16) + group 1 (4)
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t row_offset(cuda::std::int64_t row) const {
    // Unsigned: positions are non-negative, and unsigned / and % by powers of two are single shifts
    // and masks (signed ones need a rounding fix-up).
    const auto r = static_cast<cuda::std::uint64_t>(row);
    return static_cast<cuda::std::int64_t>((r / 128) * static_cast<cuda::std::uint64_t>(padded_cols() / 4) * 512 +
                                            (r % 32) * 16 + ((r % 128) / 32) * 4);
  }
  /// The scale column's part of `offset` (see `row_offset`).
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{128, 16}.col_offset(5) == 513);  // tile 1 (512) + column 1
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t col_offset(cuda::std::int64_t scale_col) const {
    const auto k = static_cast<cuda::std::uint64_t>(scale_col);
    return static_cast<cuda::std::int64_t>((k / 4) * 512 + (k % 4));
  }
  /// True where (row, scale_col) lies in the padding (row >= rows or scale_col >= scale_cols).
  /// \code
  /// static_assert(fp4fuse::scale_layout::swizzled_128x4{100, 5}.is_padding(100, 0) && !fp4fuse::scale_layout::swizzled_128x4{100, 5}.is_padding(99, 4));
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr bool is_padding(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    return row >= rows || scale_col >= scale_cols;
  }
};

namespace expert_start {
/// vLLM's `blockscale_offsets`: expert e's scale rows start at sum over i < e of
/// round_up(count_i, 128) (data-dependent; the bands are contiguous).
struct padded_prefix_sum {};
/// TensorRT-LLM's and flashinfer's: expert e's scale rows start at round_up(offset_e + 127 e, 128)
/// (computable from the expert's own token offset; gaps between bands are padding).
struct offset_bound {};
}  // namespace expert_start

/// The scale tensor of a grouped (MoE) activation: per-expert 128x4 swizzled blocks (see the file
/// comment for the picture). `expert_offsets` is read where the layout is used: host memory for
/// host calls, device memory when the layout is passed to a kernel.
/// \code
/// using L = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
/// const L layout{capacity, I / 16, E, d_expert_offsets};
/// cudaMalloc(&scales, layout.size_bytes());  // round_up(capacity + 127 E, 128) * round_up(I / 16, 4) bytes
/// \endcode
template <class ExpertStart>
struct grouped_swizzled_128x4 {
  static_assert(cuda::std::is_same_v<ExpertStart, expert_start::padded_prefix_sum> ||
                    cuda::std::is_same_v<ExpertStart, expert_start::offset_bound>,
                "grouped_swizzled_128x4<ExpertStart>: expert_start::padded_prefix_sum or expert_start::offset_bound");
  /// Rows of the grouped matrix (the token capacity): expert_offsets[experts] <= rows.
  cuda::std::int64_t rows;
  /// K / block size: scale columns per row (unpadded).
  cuda::std::int64_t scale_cols;
  /// E, the number of experts.
  cuda::std::int32_t experts;
  /// [E + 1] prefix sums of the routing counts: expert e owns rows [offsets[e], offsets[e + 1]).
  const cuda::std::int32_t* expert_offsets;

  /// Rows per band and the padding granule of each expert's block.
  static constexpr cuda::std::int64_t row_tile = swizzled_128x4::row_tile;

  /// round_up(rows + 127 E, 128): enough for any routing under either convention.
  /// \code
  /// using L = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
  ///
  /// static_assert(L{256, 4, 3, nullptr}.padded_rows() == 640);  // round_up(256 + 127 * 3, 128)
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_rows() const {
    return fp4fuse::detail::round_up(rows + (row_tile - 1) * experts, row_tile);
  }
  /// K' = round_up(scale_cols, 4).
  /// \code
  /// using L = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
  ///
  /// static_assert(L{256, 5, 3, nullptr}.padded_cols() == 8);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t padded_cols() const { return fp4fuse::detail::round_up(scale_cols, swizzled_128x4::col_tile); }
  /// padded_rows() * padded_cols() bytes.
  /// \code
  /// using L = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
  ///
  /// static_assert(L{256, 4, 3, nullptr}.size_bytes() == 640 * 4);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t size_bytes() const { return padded_rows() * padded_cols(); }

  /// The first scale row of expert e from its token offset (expert_offsets[e]) and, for
  /// padded_prefix_sum, the padded rows of the experts before it (sum over i < e of
  /// round_up(count_i, 128)): what a kernel computes for all experts at once with a scan.
  /// \code
  /// using OB = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
  /// using PPS = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::padded_prefix_sum>;
  /// static_assert(OB::start_row(2, 130, 256) == 384 && PPS::start_row(2, 130, 256) == 256);  // expert 2 after counts {130, 0}
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr cuda::std::int64_t start_row(cuda::std::int64_t e, cuda::std::int64_t token_offset,
                                                                    cuda::std::int64_t padded_rows_before) {
    if constexpr (cuda::std::is_same_v<ExpertStart, expert_start::padded_prefix_sum>) {
      (void)e, (void)token_offset;
      return padded_rows_before;
    } else {
      (void)padded_rows_before;
      return fp4fuse::detail::round_up(token_offset + (row_tile - 1) * e, row_tile);
    }
  }

  /// Expert e's block: its first scale row and its own 128x4 layout {count_e, scale_cols}; byte
  /// (r, k) of the block, r < round_up(count_e, 128), is at `start_row * padded_cols() +
  /// layout.offset(r, k)`. Reads expert_offsets[0..e+1] (O(e) for padded_prefix_sum: a
  /// convenience for host code and tests; kernels scan all experts at once).
  struct expert_block {
    /// The expert's first scale row (a multiple of 128).
    cuda::std::int64_t start_row;
    /// The expert's own swizzled layout: {count_e, scale_cols}.
    swizzled_128x4 layout;
  };
  /// Expert e's block (see `expert_block`).
  /// \code
  /// static constexpr std::int32_t offsets[4] = {0, 130, 130, 135};  // counts {130, 0, 5}, the file comment's picture
  /// constexpr fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound> layout{256, 4, 3, offsets};
  ///
  /// static_assert(layout.expert(2).start_row == 384 && layout.expert(2).layout.rows == 5);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr expert_block expert(cuda::std::int32_t e) const {
    cuda::std::int64_t before = 0;
    if constexpr (cuda::std::is_same_v<ExpertStart, expert_start::padded_prefix_sum>) {
      for (cuda::std::int32_t i = 0; i < e; ++i) before += fp4fuse::detail::round_up(cuda::std::int64_t{expert_offsets[i + 1] - expert_offsets[i]}, row_tile);
    }
    return {start_row(e, expert_offsets[e], before), swizzled_128x4{expert_offsets[e + 1] - expert_offsets[e], scale_cols}};
  }
  /// The expert that owns token row `row` (binary search; row < expert_offsets[experts]).
  /// \code
  /// static constexpr std::int32_t offsets[4] = {0, 130, 130, 135};  // counts {130, 0, 5}, the file comment's picture
  /// constexpr fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound> layout{256, 4, 3, offsets};
  ///
  /// static_assert(layout.expert_of(131) == 2);  // expert 1 has no rows
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int32_t expert_of(cuda::std::int64_t row) const {
    cuda::std::int32_t lo = 0, hi = experts;  // offsets[lo] <= row < offsets[hi]
    while (hi - lo > 1) {
      const cuda::std::int32_t mid = (lo + hi) / 2;
      (expert_offsets[mid] <= row ? lo : hi) = mid;
    }
    return lo;
  }
  /// Byte offset of the scale of token row `row` (< expert_offsets[experts]), scale column k.
  /// \code
  /// static constexpr std::int32_t offsets[4] = {0, 130, 130, 135};  // counts {130, 0, 5}, the file comment's picture
  /// constexpr fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound> layout{256, 4, 3, offsets};
  ///
  /// static_assert(layout.offset(131, 0) == 384 * 4 + 16);  // expert 2's block at scale row 384, its row 1
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t offset(cuda::std::int64_t row, cuda::std::int64_t scale_col) const {
    const cuda::std::int32_t e = expert_of(row);
    const expert_block b = expert(e);
    return b.start_row * padded_cols() + b.layout.offset(row - expert_offsets[e], scale_col);
  }
  /// True where scale-tensor row `scale_row` (< padded_rows()), column k holds no scale of a
  /// routed row: expert padding, gaps between experts, the tail, or k >= scale_cols. O(E).
  /// \code
  /// static constexpr std::int32_t offsets[4] = {0, 130, 130, 135};  // counts {130, 0, 5}, the file comment's picture
  /// constexpr fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound> layout{256, 4, 3, offsets};
  ///
  /// static_assert(layout.is_padding(200, 0) && layout.is_padding(300, 0) && !layout.is_padding(384, 0));  // expert 0's padding, the gap, expert 2
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr bool is_padding(cuda::std::int64_t scale_row, cuda::std::int64_t scale_col) const {
    if (scale_col >= scale_cols) return true;
    cuda::std::int64_t before = 0;
    for (cuda::std::int32_t e = 0; e < experts; ++e) {
      const cuda::std::int64_t count = expert_offsets[e + 1] - expert_offsets[e];
      const cuda::std::int64_t start = start_row(e, expert_offsets[e], before);
      if (scale_row >= start && scale_row < start + count) return false;
      before += fp4fuse::detail::round_up(count, row_tile);
    }
    return true;
  }
};

/// True for a grouped (MoE) layout, whose offsets depend on the routing: only grouped kernels
/// write it (each expert's block through its own `swizzled_128x4`). The dense entry points
/// (quantize, swiglu_quantize, dequantize, the fragment epilogues) refuse one at compile time,
/// since their grids index rows as one matrix and would miss the experts' gaps and padding.
template <class Layout>
inline constexpr bool is_grouped = false;
/// `is_grouped` of `grouped_swizzled_128x4`, for either expert start convention.
template <class ExpertStart>
inline constexpr bool is_grouped<grouped_swizzled_128x4<ExpertStart>> = true;

/// A number of scale rows and scale columns: a layout's padded extent, a tile's size, or what a
/// grid of tiles covers (all in the scale tensor's coordinates, row m and scale column k).
struct extent {
  /// Scale rows (matrix rows).
  cuda::std::int64_t rows;
  /// Scale columns (blocks along a row).
  cuda::std::int64_t cols;
};

/// The padded extent of a layout: the rows and scale columns a grid of epilogue tiles must cover
/// to write every byte of the scale tensor, padding (0x00) included. Any layout with
/// `padded_rows()` and `padded_cols()` (grouped layouts: the whole tensor, gaps included).
/// \code
/// const auto e = fp4fuse::scale_layout::padded_extent(fp4fuse::scale_layout::swizzled_128x4{1, 5});
/// // e.rows == 128, e.cols == 8
/// \endcode
template <class Layout>
FP4FUSE_HOST_DEVICE constexpr extent padded_extent(const Layout& layout) {
  return {layout.padded_rows(), layout.padded_cols()};
}

/// The tiles of `tile` scale rows x scale columns a grid needs along each dimension to cover the
/// layout's padded extent: grid dimensions with which the epilogue alone writes the whole scale
/// tensor (no memset, no `write_scale_padding_beyond_grid`).
/// \code
/// const auto t = fp4fuse::scale_layout::tiles_to_cover(fp4fuse::scale_layout::swizzled_128x4{1, 5}, {64, 2});
/// // t.rows == 2, t.cols == 4: a 2 x 4 grid of 64-row, 2-block tiles
/// \endcode
template <class Layout>
FP4FUSE_HOST_DEVICE constexpr extent tiles_to_cover(const Layout& layout, extent tile) {
  return {cuda::ceil_div(layout.padded_rows(), tile.rows), cuda::ceil_div(layout.padded_cols(), tile.cols)};
}

}  // namespace fp4fuse::scale_layout
