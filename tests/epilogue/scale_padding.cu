// The padding contract of a tile grid (epilogue/scale_padding.cuh, scale_layout::padded_extent and
// tiles_to_cover), on the host: a grid of tiles, split in parts as a GEMM's warpgroups split them,
// each part writing what an epilogue writes inside it, plus write_scale_padding_beyond_grid from
// every part; then every byte of the scale tensor holds its scale or 0x00, for grids that end
// short of the padded extent in rows, columns or both. The same grids on the GPU: one CTA per part,
// its threads sharing the stores, over a poisoned device tensor. And write_scale_padding_in, which
// writes a region's padding entries: exactly those, and what the fused epilogue writes for a part
// of a tile with no row of the matrix.
#include <fp4fuse/epilogue/host_twin.cuh>
#include <fp4fuse/epilogue/scale_padding.cuh>
#include <fp4fuse/scale_layout.cuh>

#include <algorithm>
#include <vector>

#include "../kernels/kernel_test_support.cuh"

using fp4fuse_test::device_buffer;

namespace {

using fp4fuse::scale_layout::extent;

constexpr std::uint8_t code = 0x11;
using fp4fuse_test::poison;

/// Runs the grid of `tile` tiles (covering round_up(rows, tile.rows) x round_up(cols, tile.cols)),
/// each split in `parts` x 1 parts along the rows or 1 x `parts` along the columns, over a poisoned
/// tensor; returns the number of bytes that are wrong.
template <class Layout>
std::size_t run_grid(const Layout& layout, extent tile, int parts, bool split_rows, int threads) {
  std::vector<std::uint8_t> scales(static_cast<std::size_t>(layout.size_bytes()), poison);
  const extent covered{(layout.rows + tile.rows - 1) / tile.rows * tile.rows, (layout.scale_cols + tile.cols - 1) / tile.cols * tile.cols};
  const fp4fuse::scale_tile_grid grid{tile, covered};
  const extent part_size{split_rows ? tile.rows / parts : tile.rows, split_rows ? tile.cols : tile.cols / parts};
  const extent padded = fp4fuse::scale_layout::padded_extent(layout);
  for (std::int64_t r0 = 0; r0 < covered.rows; r0 += tile.rows)
    for (std::int64_t c0 = 0; c0 < covered.cols; c0 += tile.cols)
      for (int p = 0; p < parts; ++p) {
        const fp4fuse::scale_region part{r0 + (split_rows ? p * part_size.rows : 0), c0 + (split_rows ? 0 : p * part_size.cols), part_size};
        // What the epilogue writes inside the part: the scale in the matrix, 0x00 in the padding.
        for (std::int64_t r = part.row0; r < part.row0 + part_size.rows; ++r)
          for (std::int64_t k = part.col0; k < part.col0 + part_size.cols; ++k)
            if (r < padded.rows && k < padded.cols) scales[static_cast<std::size_t>(layout.offset(r, k))] = layout.is_padding(r, k) ? 0 : code;
        for (int t = 0; t < threads; ++t) fp4fuse::write_scale_padding_beyond_grid(scales.data(), layout, grid, part, t, threads);
      }
  std::size_t bad = 0;
  for (std::int64_t r = 0; r < padded.rows; ++r)
    for (std::int64_t k = 0; k < padded.cols; ++k)
      bad += scales[static_cast<std::size_t>(layout.offset(r, k))] != (layout.is_padding(r, k) ? 0 : code);
  return bad;
}

/// The device's run of a grid: CTA b is part b % parts of tile b / parts (tiles in row-major order,
/// tiles_per_row per row); its threads write the part's interior as an epilogue would (the code in
/// the matrix, 0x00 in the padding) and then call write_scale_padding_beyond_grid, sharing the stores.
template <class Layout>
__global__ void grid_kernel(std::uint8_t* scales, Layout layout, fp4fuse::scale_tile_grid grid, extent part_size, int parts, bool split_rows,
                            std::int64_t tiles_per_row) {
  const std::int64_t tile = blockIdx.x / parts, p = blockIdx.x % parts;
  const std::int64_t r0 = tile / tiles_per_row * grid.tile.rows, c0 = tile % tiles_per_row * grid.tile.cols;
  const fp4fuse::scale_region part{r0 + (split_rows ? p * part_size.rows : 0), c0 + (split_rows ? 0 : p * part_size.cols), part_size};
  const extent padded = fp4fuse::scale_layout::padded_extent(layout);
  for (std::int64_t i = threadIdx.x; i < part_size.rows * part_size.cols; i += blockDim.x) {
    const std::int64_t r = part.row0 + i / part_size.cols, k = part.col0 + i % part_size.cols;
    if (r < padded.rows && k < padded.cols) scales[layout.offset(r, k)] = layout.is_padding(r, k) ? 0 : code;
  }
  fp4fuse::write_scale_padding_beyond_grid(scales, layout, grid, part, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x));
}

/// run_grid on the GPU: the wrong bytes of the device's tensor, and (out) how many bytes the
/// padding writes beyond the grid had to supply (those the interior writes left poisoned).
template <class Layout>
std::size_t run_grid_gpu(const Layout& layout, extent tile, int parts, bool split_rows, int threads, std::size_t& beyond) {
  const extent covered{(layout.rows + tile.rows - 1) / tile.rows * tile.rows, (layout.scale_cols + tile.cols - 1) / tile.cols * tile.cols};
  const fp4fuse::scale_tile_grid grid{tile, covered};
  const extent part_size{split_rows ? tile.rows / parts : tile.rows, split_rows ? tile.cols : tile.cols / parts};
  const extent padded = fp4fuse::scale_layout::padded_extent(layout);
  const std::int64_t tiles_per_row = covered.cols / tile.cols, tiles = covered.rows / tile.rows * tiles_per_row;
  device_buffer d_scales(static_cast<std::size_t>(layout.size_bytes()));  // poisoned
  grid_kernel<<<static_cast<unsigned>(tiles * parts), threads>>>(d_scales.as<std::uint8_t>(), layout, grid, part_size, parts, split_rows, tiles_per_row);
  FP4FUSE_TEST_LAUNCHED();
  const std::vector<unsigned char> scales = d_scales.download();
  std::size_t bad = 0;
  beyond = 0;
  for (std::int64_t r = 0; r < padded.rows; ++r)
    for (std::int64_t k = 0; k < padded.cols; ++k) {
      bad += scales[static_cast<std::size_t>(layout.offset(r, k))] != (layout.is_padding(r, k) ? 0 : code);
      beyond += r >= covered.rows || k >= covered.cols;
    }
  if (!d_scales.guard_intact()) ++bad;
  return bad;
}

}  // namespace

TEST_CASE("scale_layout::padded_extent and tiles_to_cover", "[epilogue]") {
  const fp4fuse::scale_layout::swizzled_128x4 s{1, 5};
  CHECK(fp4fuse::scale_layout::padded_extent(s).rows == 128);
  CHECK(fp4fuse::scale_layout::padded_extent(s).cols == 8);
  CHECK(fp4fuse::scale_layout::tiles_to_cover(s, {64, 2}).rows == 2);
  CHECK(fp4fuse::scale_layout::tiles_to_cover(s, {64, 2}).cols == 4);
  CHECK(fp4fuse::scale_layout::tiles_to_cover(s, {128, 8}).cols == 1);
  const fp4fuse::scale_layout::linear l{37, 6};
  CHECK(fp4fuse::scale_layout::padded_extent(l).rows == 37);
  CHECK(fp4fuse::scale_layout::tiles_to_cover(l, {16, 4}).rows == 3);
  CHECK(fp4fuse::scale_layout::tiles_to_cover(l, {16, 4}).cols == 2);
}

TEST_CASE("write_scale_padding_beyond_grid: a grid short of the padded extent leaves no byte unwritten", "[epilogue]") {
  // The example GEMM's tiles: 64 or 128 rows x 1 (32 gate/up columns), 2, 4, 6 or 8 scale columns,
  // split in two warpgroup parts along the rows (128-row tiles) or the columns (64-row tiles).
  for (std::int64_t M : {1, 37, 64, 65, 128, 130, 300}) {
    for (std::int64_t K : {1, 3, 4, 5, 8, 9, 90}) {
      const fp4fuse::scale_layout::swizzled_128x4 layout{M, K};
      INFO("M=" << M << " scale columns=" << K);
      CHECK(run_grid(layout, {64, 1}, 1, true, 128) == 0);
      CHECK(run_grid(layout, {64, 2}, 2, false, 128) == 0);
      CHECK(run_grid(layout, {64, 4}, 2, false, 7) == 0);
      CHECK(run_grid(layout, {64, 8}, 2, false, 128) == 0);
      CHECK(run_grid(layout, {128, 6}, 2, true, 128) == 0);
      CHECK(run_grid(layout, {128, 8}, 2, true, 3) == 0);
      CHECK(run_grid(layout, {16, 1}, 1, true, 32) == 0);
      // A linear layout has no padding: nothing beyond the grid is written (the grid covers it).
      CHECK(run_grid(fp4fuse::scale_layout::linear{M, K}, {16, 2}, 2, false, 5) == 0);
    }
  }
}

TEST_CASE("write_scale_padding_beyond_grid: a grid that covers the padded extent writes nothing more", "[epilogue]") {
  const fp4fuse::scale_layout::swizzled_128x4 layout{130, 5};
  std::vector<std::uint8_t> scales(static_cast<std::size_t>(layout.size_bytes()), poison);
  const fp4fuse::scale_tile_grid grid{{128, 4}, {256, 8}};
  for (std::int64_t r0 = 0; r0 < 256; r0 += 128)
    for (std::int64_t c0 = 0; c0 < 8; c0 += 4) fp4fuse::write_scale_padding_beyond_grid(scales.data(), layout, grid, {r0, c0, {128, 4}}, 0, 1);
  for (std::uint8_t b : scales) REQUIRE(b == poison);
}

TEST_CASE("write_scale_padding_beyond_grid on the output descriptor writes what the layout form writes", "[epilogue]") {
  for (std::int64_t M : {1, 37, 128, 130}) {
    for (std::int64_t K : {1, 4, 5, 9}) {
      const fp4fuse::scale_layout::swizzled_128x4 layout{M, K};
      INFO("M=" << M << " scale columns=" << K);
      std::vector<std::uint8_t> by_layout(static_cast<std::size_t>(layout.size_bytes()), poison), by_output = by_layout;
      const fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{nullptr, 16 * K, by_output.data(), layout};
      const extent tile{64, 2};
      const fp4fuse::scale_tile_grid grid{tile, {(M + 63) / 64 * 64, (K + 1) / 2 * 2}};
      for (std::int64_t r0 = 0; r0 < grid.covered.rows; r0 += tile.rows)
        for (std::int64_t c0 = 0; c0 < grid.covered.cols; c0 += tile.cols) {
          fp4fuse::write_scale_padding_beyond_grid(by_layout.data(), layout, grid, {r0, c0, tile}, 0, 1);
          fp4fuse::write_scale_padding_beyond_grid(out, grid, {r0, c0, tile}, 0, 1);
        }
      REQUIRE(by_output == by_layout);
      // 64-row tiles end short of the 128-row padding for M <= 64, 2-block tiles short of 4 blocks for K % 4 in 1..2.
      const bool short_grid = grid.covered.rows < layout.padded_rows() || grid.covered.cols < layout.padded_cols();
      CHECK((std::count(by_output.begin(), by_output.end(), std::uint8_t{0}) > 0) == short_grid);
    }
  }
}

TEST_CASE("write_scale_padding_in: exactly the region's padding entries become 0x00", "[epilogue]") {
  // Regions as a 192-row tile's consumers see an expert: 64 rows x 4 scale columns wholly beyond
  // the rows, straddling them, or inside; at the last scale columns; threads sharing the stores.
  for (std::int64_t M : {1, 37, 64, 100, 128, 130}) {
    for (std::int64_t K : {1, 4, 5, 9}) {
      const fp4fuse::scale_layout::swizzled_128x4 layout{M, K};
      const extent padded = fp4fuse::scale_layout::padded_extent(layout);
      for (std::int64_t r0 : {0, 64, 128, 192}) {
        for (std::int64_t c0 : {0, 4, 8}) {
          for (int threads : {1, 3, 128}) {
            INFO("M=" << M << " scale columns=" << K << " region at (" << r0 << ", " << c0 << ") threads=" << threads);
            // Guard bytes past the tensor: a write beyond the padded extent would land there (in a
            // grouped layout, in the next expert's band).
            std::vector<std::uint8_t> scales(static_cast<std::size_t>(layout.size_bytes()) + 4096, poison);
            const fp4fuse::scale_region region{r0, c0, {64, 4}};
            for (int t = 0; t < threads; ++t) fp4fuse::write_scale_padding_in(scales.data(), layout, region, t, threads);
            CHECK(std::all_of(scales.begin() + layout.size_bytes(), scales.end(), [](std::uint8_t b) { return b == poison; }));
            std::size_t bad = 0, zeroed = 0;
            for (std::int64_t r = 0; r < padded.rows; ++r)
              for (std::int64_t k = 0; k < padded.cols; ++k) {
                const bool in_region = r >= r0 && r < r0 + 64 && k >= c0 && k < c0 + 4;
                const std::uint8_t want = in_region && layout.is_padding(r, k) ? 0 : poison;
                const std::uint8_t got = scales[static_cast<std::size_t>(layout.offset(r, k))];
                bad += got != want;
                zeroed += got == 0;
              }
            CHECK(bad == 0);
            // Rows at or beyond M inside the padded extent: the region has padding to write.
            if (r0 >= M && r0 < padded.rows && c0 < padded.cols) CHECK(zeroed > 0);
          }
        }
      }
    }
  }
  // A linear layout has no padding: nothing is written.
  const fp4fuse::scale_layout::linear l{37, 6};
  std::vector<std::uint8_t> scales(static_cast<std::size_t>(l.size_bytes()), poison);
  fp4fuse::write_scale_padding_in(scales.data(), l, {32, 4, {64, 4}}, 0, 1);
  for (std::uint8_t b : scales) REQUIRE(b == poison);
}

TEST_CASE("write_scale_padding_in writes what the fragment epilogue writes for a part with no row of the matrix", "[epilogue]") {
  // The oracle is the fused epilogue itself (its host twin, the device form's numerics and stores)
  // on a warpgroup part of 64 rows x N gate/up columns at or beyond M, its accumulators holding
  // arbitrary values: every packed and scale byte of both runs must be equal.
  using format = fp4fuse::format::nvfp4<>;
  using layout_t = fp4fuse::scale_layout::swizzled_128x4;
  constexpr int N = 128;  // gate/up columns: 4 NVFP4 blocks
  static float acc[128][N / 2];
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < N / 2; ++i) acc[t][i] = static_cast<float>((t * 37 + i * 11) % 23) - 11.0f;
  for (std::int64_t M : {1, 37, 64, 100, 128, 130, 300}) {
    for (std::int64_t K : {1, 4, 5, 9}) {  // scale columns (I = 16 K outputs)
      const layout_t layout{M, K};
      const extent padded = fp4fuse::scale_layout::padded_extent(layout);
      const std::int64_t ld_packed = 8 * K + 16;
      for (std::int64_t r0 = (M + 63) / 64 * 64; r0 < padded.rows + 64; r0 += 64) {
        for (std::int64_t k0 = 0; k0 < padded.cols + 4; k0 += 4) {
          INFO("M=" << M << " scale columns=" << K << " part at row " << r0 << ", scale column " << k0);
          std::vector<std::uint8_t> packed_epi(static_cast<std::size_t>(M * ld_packed), poison), packed_pad = packed_epi;
          std::vector<std::uint8_t> scales_epi(static_cast<std::size_t>(layout.size_bytes()), poison), scales_pad = scales_epi;
          const fp4fuse::quantized_matrix<format, layout_t> out{packed_epi.data(), ld_packed, scales_epi.data(), layout};
          fp4fuse::wgmma_epilogue_host(fp4fuse::fused_epilogue{fp4fuse::block_codec<format>(448.0f), fp4fuse::sink::direct{out}}, acc,
                                       {r0, 32 * k0});
          fp4fuse::write_scale_padding_in(scales_pad.data(), layout, {r0, k0, {64, N / 32}}, 0, 1);
          CHECK(scales_pad == scales_epi);
          CHECK(packed_pad == packed_epi);  // neither writes a packed byte there
        }
      }
    }
  }
}

TEST_CASE("write_scale_padding_beyond_grid [gpu]: called on the device by every part's threads, no byte left unwritten", "[gpu][epilogue]") {
  std::size_t strips = 0;  // grids whose padding beyond the grid is not empty: the function had work to do
  for (std::int64_t M : {1, 37, 64, 65, 130, 300}) {
    for (std::int64_t K : {1, 3, 5, 8, 9, 90}) {
      const fp4fuse::scale_layout::swizzled_128x4 layout{M, K};
      INFO("M=" << M << " scale columns=" << K);
      std::size_t beyond = 0;
      CHECK(run_grid_gpu(layout, {64, 1}, 1, true, 128, beyond) == 0);
      strips += beyond > 0;
      CHECK(run_grid_gpu(layout, {64, 2}, 2, false, 128, beyond) == 0);
      strips += beyond > 0;
      CHECK(run_grid_gpu(layout, {64, 4}, 2, false, 7, beyond) == 0);
      CHECK(run_grid_gpu(layout, {128, 6}, 2, true, 128, beyond) == 0);
      strips += beyond > 0;
      CHECK(run_grid_gpu(layout, {16, 1}, 1, true, 32, beyond) == 0);
      CHECK(run_grid_gpu(fp4fuse::scale_layout::linear{M, K}, {16, 2}, 2, false, 5, beyond) == 0);
    }
  }
  CHECK(strips > 20);
}
