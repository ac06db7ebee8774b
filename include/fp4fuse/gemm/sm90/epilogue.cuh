#pragma once
// The sm_90a GEMM's epilogue collective: how the kernels call an epilogue (epilogues.cuh for the
// dense bindings, grouped.cuh for the grouped ones): the optional members detected (padding,
// prefetch, for_group, warpgroup_beyond_rows, the padding granule, the group bands), the binding of a work unit's
// epilogue, and the output's padding beyond a tile. The kernels know no output layout: what they
// need of one is asked here.
#include <cuda/cmath>
#include <type_traits>
#include <utility>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/cmath.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"

namespace fp4fuse::gemm::sm90 {
namespace detail {

/// True for epilogues with `padding_beyond<N>(grid, row0, col0)` (epilogues.cuh).
template <class Epilogue, int N, class = void>
inline constexpr bool has_padding = false;
template <class Epilogue, int N>
inline constexpr bool has_padding<Epilogue, N,
                                  std::void_t<decltype(std::declval<const Epilogue&>().template padding_beyond<N>(
                                      std::declval<const tile_grid&>(), index_t{}, index_t{}))>> = true;

/// True for epilogues with `warpgroup_beyond_rows<N>(row0, col0)` (epilogues.cuh).
template <class Epilogue, int N, class = void>
inline constexpr bool has_beyond_rows = false;
template <class Epilogue, int N>
inline constexpr bool has_beyond_rows<
    Epilogue, N, std::void_t<decltype(std::declval<const Epilogue&>().template warpgroup_beyond_rows<N>(index_t{}, index_t{}))>> = true;

/// The epilogue of a consumer warpgroup's part 64 x N at (row0, col0) of a tile: `warpgroup(acc,
/// row0, col0)`, or where the part holds no row of the output (`has_rows` false: row0 >= the
/// epilogue's rows) and the epilogue can say what it writes there (`warpgroup_beyond_rows`), that
/// alone: a 192-row tile's consumers whose 64 rows all lie beyond the expert's then run no
/// activations. The BF16 epilogues write nothing beyond the rows (their bounds checks skip the
/// activation and the store per element) and have no such member.
template <int N, class Epilogue, int Registers>
FP4FUSE_DEVICE void warpgroup_epilogue(const Epilogue& epi, const float (&acc)[Registers], bool has_rows, index_t row0, index_t col0) {
  if constexpr (has_beyond_rows<Epilogue, N>) {
    if (!has_rows) {
      epi.template warpgroup_beyond_rows<N>(row0, col0);
      return;
    }
  }
  epi.warpgroup(acc, row0, col0);
}

/// True for epilogues with `prefetch()` (epilogues.cuh).
template <class Epilogue, class = void>
inline constexpr bool has_prefetch = false;
template <class Epilogue>
inline constexpr bool has_prefetch<Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().prefetch())>> = true;

/// Lets an epilogue fetch what it reads (a scale in device memory) while the mainloop runs: with
/// one tile per CTA (decode, T = 512) its first read would otherwise wait for DRAM after the last MMA.
template <class Epilogue>
FP4FUSE_DEVICE void prefetch_epilogue(const Epilogue& epi) {
  if constexpr (has_prefetch<Epilogue>) {
    epi.prefetch();
  }
}

/// True for epilogues with `for_group(const work_unit&)`: a grouped GEMM's epilogue, which
/// returns the epilogue of the unit's group's output (its rows counted from the group's first:
/// u.group, u.group_row0, u.group_rows, u.group_band_row0 say which and where).
template <class Epilogue, class = void>
inline constexpr bool has_for_group = false;
template <class Epilogue>
inline constexpr bool has_for_group<
    Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().for_group(std::declval<const work_unit&>()))>> = true;

/// The epilogue of unit `u`'s tile, which the kernels call with rows relative to the unit's
/// group (schedule.cuh): `epi` itself, or for an epilogue with `for_group` the one it binds to
/// the group (the group's output rows group_row0 .. group_row0 + group_rows - 1).
template <class Epilogue>
FP4FUSE_DEVICE decltype(auto) epilogue_for(const Epilogue& epi, const work_unit& u) {
  if constexpr (has_for_group<Epilogue>) {
    return epi.for_group(u);
  } else {
    return epi;  // decltype(auto) of a reference parameter: the reference, no copy
  }
}

/// The type of `epilogue_for`'s epilogue.
template <class Epilogue, class = void>
struct unit_epilogue_of {
  using type = Epilogue;
};
template <class Epilogue>
struct unit_epilogue_of<Epilogue, std::enable_if_t<has_for_group<Epilogue>>> {
  using type = std::decay_t<decltype(std::declval<const Epilogue&>().for_group(std::declval<const work_unit&>()))>;
};
template <class Epilogue>
using unit_epilogue = typename unit_epilogue_of<Epilogue>::type;

/// The output's padding beyond the tile grid: the tiles cover round_up(M, ClusterM * BlockM) rows
/// (with clusters along M the peer CTA's tile covers the rows) x round_up(N, ClusterN * BlockN)
/// columns, which can end short of the output's padded extent (64-row or 32-, 64- or 192-wide
/// tiles against the NVFP4 scales' padding); the epilogue's `padding_beyond` writes what the
/// calling warpgroup's part of a last tile owns of it (the library's
/// `write_scale_padding_beyond_grid`; the kernel knows no layout). (row0, col0): the calling
/// warpgroup's part of the tile. In a grouped GEMM, M is the unit's group's rows (group_rows) and
/// rows count from the group's first, as `epi` (epilogue_for's) takes them.
template <class Cfg, int Cluster, bool AlongN, class Epilogue>
FP4FUSE_DEVICE void pad_beyond_tile(const Epilogue& epi, const work_unit& u, const params& prm, index_t row0, index_t col0) {
  static_assert(has_padding<Epilogue, Cfg::consumer_n>,
                "pad_beyond_tile: the epilogue needs padding_beyond<N>(grid, row0, col0) (an empty one if its output has no padding)");
  constexpr index_t cluster_m = AlongN ? 1 : Cluster, cluster_n = AlongN ? Cluster : 1;
  const tile_grid grid{Cfg::rows, Cfg::block_n, fp4fuse::detail::round_up(static_cast<index_t>(u.group_rows), cluster_m * Cfg::rows),
                       fp4fuse::detail::round_up(static_cast<index_t>(prm.N), cluster_n * Cfg::block_n)};
  epi.template padding_beyond<Cfg::consumer_n>(grid, row0, col0);
}

/// True when tiles of TileRows x TileCols cover the epilogue's padding: every padded extent is
/// then a whole number of tiles, and the tiles' own epilogues write all of it.
template <class Epilogue, int TileRows, int TileCols>
inline constexpr bool tiles_cover_padding =
    TileRows % gemm::padding_granule<Epilogue>::rows == 0 && TileCols % gemm::padding_granule<Epilogue>::cols == 0;

/// The band rows a grouped epilogue needs of the schedule (`Epilogue::group_band_rows`, the rows
/// its output rounds every group up to), 0 for one without.
template <class Epilogue, class = void>
inline constexpr int group_band_rows = 0;
template <class Epilogue>
inline constexpr int group_band_rows<Epilogue, std::void_t<decltype(Epilogue::group_band_rows)>> = Epilogue::group_band_rows;

}  // namespace detail

}  // namespace fp4fuse::gemm::sm90
