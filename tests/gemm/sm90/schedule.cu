// gemm/sm90/schedule.cuh on the host: the raster every schedule shares (`detail::unit_at`) gives
// each tile of a launch exactly once, its K splits adjacent and partitioning the K blocks, the
// M-blocks fastest within groups of 8; `place_in_cluster` gives the CTAs of a cluster adjacent
// tiles along the shared operand's other dimension; `fragments_with_rows` counts the 64-row
// fragments of a group's last tile that hold its rows. The kernels that run these units:
// tests/gemm/dense.cu and tests/gemm/grouped.cu.
#include <fp4fuse/gemm/sm90/schedule.cuh>

#include <vector>

#include "../../test_support.hpp"

using namespace fp4fuse_test;
namespace sm90 = fp4fuse::gemm::sm90;

TEST_CASE("unit_at: every tile once, its K splits adjacent and covering the K blocks, M-blocks fastest in groups of 8",
          "[gemm][schedule]") {
  auto g = rng("unit_at raster");
  for (int trial = 0; trial < 400; ++trial) {
    const int tiles_m = 1 + static_cast<int>(g() % 40), tiles_n = 1 + static_cast<int>(g() % 30);
    const int k_iters = 1 + static_cast<int>(g() % 120);
    const int splits = 1 + static_cast<int>(g() % (k_iters < 5 ? k_iters : 5));  // every split has K blocks
    INFO("tiles " << tiles_m << " x " << tiles_n << ", K blocks " << k_iters << ", splits " << splits);
    std::vector<int> seen(static_cast<std::size_t>(tiles_m) * tiles_n, 0);
    int previous_m = -1, previous_n = -1;
    for (int unit = 0; unit < tiles_m * tiles_n * splits; unit += splits) {
      const sm90::work_unit first = sm90::detail::unit_at(unit, tiles_m, tiles_n, splits, k_iters);
      REQUIRE((first.m_blk >= 0 && first.m_blk < tiles_m && first.n_blk >= 0 && first.n_blk < tiles_n));
      REQUIRE(first.tile == unit / splits);  // the split-K workspace slot: below the tile count
      ++seen[static_cast<std::size_t>(first.m_blk) * tiles_n + first.n_blk];
      int k_next = 0;
      for (int s = 0; s < splits; ++s) {  // the tile's splits, in order, partition [0, k_iters)
        const sm90::work_unit u = sm90::detail::unit_at(unit + s, tiles_m, tiles_n, splits, k_iters);
        REQUIRE((u.m_blk == first.m_blk && u.n_blk == first.n_blk && u.tile == first.tile && u.split == s));
        REQUIRE(u.k_begin == k_next);
        REQUIRE(u.k_end > u.k_begin);
        k_next = u.k_end;
      }
      REQUIRE(k_next == k_iters);
      // The raster: within a group of 8 row blocks the row block advances first, then the column.
      if (previous_m >= 0 && first.m_blk / sm90::group_m == previous_m / sm90::group_m) {
        const bool next_row = first.m_blk == previous_m + 1 && first.n_blk == previous_n;
        const bool next_column = first.m_blk == (first.m_blk / sm90::group_m) * sm90::group_m && first.n_blk == previous_n + 1;
        REQUIRE((next_row || next_column));
      } else if (previous_m >= 0) {  // the next group starts at its first row block, column 0
        REQUIRE((first.m_blk == previous_m + 1 && first.m_blk % sm90::group_m == 0 && first.n_blk == 0));
      }
      previous_m = first.m_blk;
      previous_n = first.n_blk;
    }
    for (std::size_t t = 0; t < seen.size(); ++t) REQUIRE(seen[t] == 1);
  }
}

TEST_CASE("place_in_cluster: a cluster's CTAs take adjacent tiles across the operand they share", "[gemm][schedule]") {
  for (int m = 0; m < 5; ++m)
    for (int n = 0; n < 5; ++n)
      for (int rank = 0; rank < 2; ++rank) {
        sm90::work_unit along_m{}, along_n{}, alone{};
        along_m.m_blk = along_n.m_blk = alone.m_blk = m;
        along_m.n_blk = along_n.n_blk = alone.n_blk = n;
        sm90::detail::place_in_cluster<2, false>(along_m, rank);  // W shared: the same columns, rows 2m, 2m + 1
        sm90::detail::place_in_cluster<2, true>(along_n, rank);   // X shared: the same rows, columns 2n, 2n + 1
        sm90::detail::place_in_cluster<1, false>(alone, 0);
        CHECK((along_m.m_blk == 2 * m + rank && along_m.n_blk == n));
        CHECK((along_n.m_blk == m && along_n.n_blk == 2 * n + rank));
        CHECK((alone.m_blk == m && alone.n_blk == n));
      }
}

TEST_CASE("fragments_with_rows: the 64-row fragments of a tile that hold rows of its group", "[gemm][schedule]") {
  using tile128 = sm90::config<128>;       // two 64-row fragments
  using tile192 = sm90::config<128, 192>;  // three
  static_assert(tile128::rows == 128 && tile192::rows == 192);
  for (int rows = 1; rows <= 1000; ++rows) {
    sm90::work_unit u{};
    u.group_rows = rows;
    for (u.m_blk = 0; u.m_blk * 192 < rows; ++u.m_blk) {  // every tile that holds a row of the group
      const int left = rows - u.m_blk * 192;
      INFO("rows " << rows << ", row block " << u.m_blk);
      CHECK(sm90::detail::fragments_with_rows<tile192>(u) == (left >= 192 ? 3 : (left + 63) / 64));
    }
    for (u.m_blk = 0; u.m_blk * 128 < rows; ++u.m_blk) {
      const int left = rows - u.m_blk * 128;
      INFO("rows " << rows << ", row block " << u.m_blk);
      CHECK(sm90::detail::fragments_with_rows<tile128>(u) == (left >= 128 ? 2 : (left + 63) / 64));
    }
  }
}
