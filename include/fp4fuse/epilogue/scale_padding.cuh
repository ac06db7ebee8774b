#pragma once
/// \file epilogue/scale_padding.cuh
/// The padding contract of a tile grid. A GEMM reads the whole scale tensor, padding included, so
/// every byte of `scale_layout::padded_extent(layout)` must be written: the epilogues write the
/// padding that falls inside their tiles (0x00), and a grid whose tiles end short of the padded
/// extent (64-row tiles with M = 1 against the swizzled layout's 128 rows, 32- or 192-wide tiles
/// against its 4-block columns) leaves a strip that nobody writes. `write_scale_padding_beyond_grid`
/// writes that strip from the grid's last tiles, without the kernel knowing any layout's granule:
/// each part of a last tile writes its copies shifted by whole tiles beyond the grid, clipped to the
/// padded extent (its share of the strip, so the parts of the grid's edge tiles write it once).
/// \verbatim
///   scale columns ->          covered.cols     padded_cols()
///   +--------+--------+--------+......+        last tile column: copies shifted right
///   | tile   | tile   | tile   | copy :        last tile row: copies shifted down
///   +--------+--------+--------+......+        the corner tile: both and the diagonal
///   | tile   | tile   | tile   | copy :
///   +--------+--------+--------+......+ covered.rows
///   : copy   : copy   : copy   : copy :
///   +........+........+........+......+ padded_rows()
/// \endverbatim
#include <cuda/std/cstdint>

#include "fp4fuse/config.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

/// A grid of equal tiles over the scale tensor, in scale coordinates (rows, scale columns): tile
/// (i, j) covers rows [i * tile.rows, (i + 1) * tile.rows) and scale columns [j * tile.cols,
/// (j + 1) * tile.cols); all tiles together cover [0, covered.rows) x [0, covered.cols). An
/// epilogue tile of R rows and C gate/up columns is R x C / (2 * block_size) here (C / 32 for NVFP4).
struct scale_tile_grid {
  /// One tile's scale rows and scale columns.
  scale_layout::extent tile;
  /// The rows and scale columns the grid's tiles cover (at least the matrix: rows >= M, cols >= K / block size).
  scale_layout::extent covered;
};

/// A rectangle of scale entries: rows [row0, row0 + size.rows), scale columns [col0, col0 + size.cols).
struct scale_region {
  /// First scale row.
  cuda::std::int64_t row0;
  /// First scale column.
  cuda::std::int64_t col0;
  /// Rows and scale columns.
  scale_layout::extent size;
};

/// Writes 0x00 over `part`'s share of the scale padding that `grid` does not cover: the copies of
/// `part` (a piece of one tile, for example one warpgroup's half) shifted by whole tiles down
/// (if its tile is in the grid's last row of tiles), right (last column) or both (the corner),
/// clipped to `scale_layout::padded_extent(layout)`. The copies of the parts of all edge tiles
/// tile the uncovered strip exactly once. `threads` threads call it with the same arguments and
/// their own `thread` (0 .. threads - 1) and share the stores; nothing is written for a tile that
/// is not at the grid's edge, nor when the grid covers the padded extent.
/// Preconditions: `grid.covered` covers the matrix (every byte written is padding), part lies in
/// one tile, `scales` holds `layout.size_bytes()` bytes. The layout needs `padded_rows`,
/// `padded_cols` and `offset`; grouped layouts are written per expert (`layout.expert(e)`).
/// \code
/// // Two consumer warpgroups (wg = 0, 1), each 64 rows x 2 blocks of a 64 x 4-block tile at (m0, k0):
/// __device__ void pad(const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out, std::int64_t m0, std::int64_t k0, int wg) {
///   const std::int64_t M = out.rows(), blocks = out.layout.scale_cols;
///   const fp4fuse::scale_tile_grid grid{{64, 4}, {cuda::ceil_div(M, 64) * 64, cuda::ceil_div(blocks, 4) * 4}};
///   fp4fuse::write_scale_padding_beyond_grid(out.scales, out.layout, grid, {m0, k0 + 2 * wg, {64, 2}}, threadIdx.x % 128, 128);
/// }
/// \endcode
template <class Layout>
FP4FUSE_HOST_DEVICE void write_scale_padding_beyond_grid(cuda::std::uint8_t* scales, const Layout& layout, scale_tile_grid grid,
                                                         scale_region part, int thread, int threads) {
  static_assert(!scale_layout::is_grouped<Layout>,
                "write_scale_padding_beyond_grid: a grouped (MoE) layout is written per expert (layout.expert(e)), each with its own grid");
  const scale_layout::extent padded = scale_layout::padded_extent(layout);
  const cuda::std::int64_t tile_end_row = (part.row0 / grid.tile.rows + 1) * grid.tile.rows;
  const cuda::std::int64_t tile_end_col = (part.col0 / grid.tile.cols + 1) * grid.tile.cols;
  // Copies of the part (its own place included) along each dimension: more than one only for a
  // tile at the grid's edge whose copies reach into the padded extent.
  const cuda::std::int64_t row_copies =
      tile_end_row >= grid.covered.rows && padded.rows > part.row0 ? (padded.rows - part.row0 + grid.tile.rows - 1) / grid.tile.rows : 1;
  const cuda::std::int64_t col_copies =
      tile_end_col >= grid.covered.cols && padded.cols > part.col0 ? (padded.cols - part.col0 + grid.tile.cols - 1) / grid.tile.cols : 1;
  if (row_copies * col_copies == 1) return;
  // A part is small (a warpgroup's rows x a few blocks): 32-bit indices.
  const auto cols = static_cast<cuda::std::uint32_t>(part.size.cols);
  const auto count = static_cast<cuda::std::uint32_t>(part.size.rows) * cols;
  for (cuda::std::int64_t a = 0; a < row_copies; ++a) {
    for (cuda::std::int64_t b = 0; b < col_copies; ++b) {
      if (a == 0 && b == 0) continue;  // the part itself: its epilogue writes it
      const cuda::std::int64_t r0 = part.row0 + a * grid.tile.rows, c0 = part.col0 + b * grid.tile.cols;
      for (auto i = static_cast<cuda::std::uint32_t>(thread); i < count; i += static_cast<cuda::std::uint32_t>(threads)) {
        const cuda::std::int64_t row = r0 + i / cols, col = c0 + i % cols;
        if (row < padded.rows && col < padded.cols) scales[layout.offset(row, col)] = 0;
      }
    }
  }
}

/// Writes 0x00 over the entries of `region` (scale rows and columns) that are the layout's padding:
/// rows at or beyond the matrix's (`layout.rows`) or scale columns at or beyond `layout.scale_cols`,
/// inside `scale_layout::padded_extent(layout)`; nothing else. For a part of a tile that holds no
/// row of the matrix (a consumer's rows wholly beyond an expert's) that is every byte its fragment
/// epilogue would write, without the activations (tests/epilogue/scale_padding.cu checks it against
/// the epilogue's host twin); a part with rows of the matrix also needs its scales, which only the
/// epilogue writes. `threads` threads call it with the same arguments and their own `thread` and
/// share the stores. The layout needs `rows`, `scale_cols`, `padded_rows`, `padded_cols` and `offset`
/// (grouped layouts: per expert, `layout.expert(e)`).
/// Preconditions: threads >= 1 and 0 <= thread < threads; region.row0, region.col0 >= 0 and
/// region.size.rows * region.size.cols < 2^32 (a part of a tile); `scales` holds
/// `layout.size_bytes()` bytes.
/// \code
/// // A warpgroup's 64 rows x 4 scale columns at (m0, k0), all of whose rows may lie beyond M:
/// __device__ void pad_rows_beyond(const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out,
///                                 std::int64_t m0, std::int64_t k0) {
///   fp4fuse::write_scale_padding_in(out.scales, out.layout, {m0, k0, {64, 4}}, threadIdx.x % 128, 128);
/// }
/// \endcode
template <class Layout>
FP4FUSE_HOST_DEVICE void write_scale_padding_in(cuda::std::uint8_t* scales, const Layout& layout, scale_region region, int thread, int threads) {
  static_assert(!scale_layout::is_grouped<Layout>,
                "write_scale_padding_in: a grouped (MoE) layout is written per expert (layout.expert(e))");
  const scale_layout::extent padded = scale_layout::padded_extent(layout);
  // A region is small (a warpgroup's rows x a few blocks): 32-bit indices.
  const auto cols = static_cast<cuda::std::uint32_t>(region.size.cols);
  const auto count = static_cast<cuda::std::uint32_t>(region.size.rows) * cols;
  for (auto i = static_cast<cuda::std::uint32_t>(thread); i < count; i += static_cast<cuda::std::uint32_t>(threads)) {
    const cuda::std::int64_t row = region.row0 + i / cols, col = region.col0 + i % cols;
    const bool padding = row >= layout.rows || col >= layout.scale_cols;
    if (padding && row < padded.rows && col < padded.cols) scales[layout.offset(row, col)] = 0;
  }
}

/// The same on the output descriptor: the scale padding of `out` (`out.scales`, `out.layout`) that
/// `grid` does not cover, as the epilogues take their output.
/// \code
/// __device__ void pad(const fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out,
///                     const fp4fuse::scale_tile_grid& grid, std::int64_t m0, std::int64_t k0) {
///   fp4fuse::write_scale_padding_beyond_grid(out, grid, {m0, k0, grid.tile}, threadIdx.x % 128, 128);  // one warpgroup per tile
/// }
/// \endcode
template <class Format, class Layout>
FP4FUSE_HOST_DEVICE void write_scale_padding_beyond_grid(const quantized_matrix<Format, Layout>& out, scale_tile_grid grid, scale_region part,
                                                         int thread, int threads) {
  write_scale_padding_beyond_grid(out.scales, out.layout, grid, part, thread, threads);
}

}  // namespace fp4fuse
