#pragma once
// How the sm_90a GEMM's kernels call an epilogue (epilogues.cuh): the optional members detected
// (padding, prefetch, for_group), and the output's padding beyond a tile.
#include <cuda/cmath>
#include <type_traits>
#include <utility>

#include "../epilogues.cuh"
#include "plan.cuh"
#include "schedule.cuh"

namespace l1_gemm::sm90 {
namespace detail {

/// True for epilogues with `padding<N>(row0, col0)` (epilogues.cuh).
template <class Epilogue, int N, class = void>
inline constexpr bool has_padding = false;
template <class Epilogue, int N>
inline constexpr bool has_padding<
    Epilogue, N, std::void_t<decltype(std::declval<const Epilogue&>().template padding<N>(index_t{}, index_t{}))>> = true;

/// Writes what an epilogue pads in a 64 x N warpgroup tile wholly beyond the output: its
/// `padding<N>` where it has one, else the epilogue itself on whatever `acc` holds (bounds-checked,
/// it then writes only its padding, at the cost of computing the tile).
template <int N, class Epilogue, int Registers>
__device__ __forceinline__ void write_padding(const Epilogue& epi, const float (&acc)[Registers], index_t row0, index_t col0) {
  if constexpr (has_padding<Epilogue, N>) {
    epi.template padding<N>(row0, col0);
  } else {
    epi.warpgroup(acc, row0, col0);
  }
}

/// True for epilogues with `prefetch()` (epilogues.cuh).
template <class Epilogue, class = void>
inline constexpr bool has_prefetch = false;
template <class Epilogue>
inline constexpr bool has_prefetch<Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().prefetch())>> = true;

/// Lets an epilogue fetch what it reads (a scale in device memory) while the mainloop runs: with
/// one tile per CTA (decode, T = 512) its first read would otherwise wait for DRAM after the last MMA.
template <class Epilogue>
__device__ __forceinline__ void prefetch_epilogue(const Epilogue& epi) {
  if constexpr (has_prefetch<Epilogue>) {
    epi.prefetch();
  }
}

/// True for epilogues with `for_group(const work_unit&)`: a grouped GEMM's epilogue, which
/// returns the epilogue of the unit's group's output (its rows counted from the group's first:
/// u.group, u.group_row0, u.group_rows, u.group_padded_row0 say which and where).
template <class Epilogue, class = void>
inline constexpr bool has_for_group = false;
template <class Epilogue>
inline constexpr bool has_for_group<
    Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().for_group(std::declval<const work_unit&>()))>> = true;

/// The epilogue of unit `u`'s tile, which the kernels call with rows relative to the unit's
/// group (schedule.cuh): `epi` itself, or for an epilogue with `for_group` the one it binds to
/// the group (the group's output rows group_row0 .. group_row0 + group_rows - 1).
template <class Epilogue>
__device__ __forceinline__ decltype(auto) epilogue_for(const Epilogue& epi, const work_unit& u) {
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

/// The output's padding beyond a tile: the tiles cover round_up(M, BlockM) x round_up(N, BlockN),
/// and with 64-row or 32-, 64- or 192-wide tiles that can end short of a multiple of 128.
/// Epilogues whose output is padded to 128 rows and 128 gate/up columns (the NVFP4 scales' 128 x 4
/// layout, whose padding is written as 0x00) get the rest from the last tile before it: rows >= M
/// and columns >= N are beyond the output, so only that padding is written (epilogues.cuh:
/// `padding`). With clusters of 2 the peer CTA's tile covers the rows. (row0, col0): the calling
/// warpgroup's part of the tile. In a grouped GEMM, M is the unit's group's rows (group_rows) and
/// rows count from the group's first, as `epi` (epilogue_for's) takes them.
template <class Cfg, int Cluster, class Epilogue, int Registers>
__device__ __forceinline__ void pad_beyond_tile(const Epilogue& epi, const float (&acc)[Registers], const work_unit& u,
                                                const params& prm, index_t row0, index_t col0) {
  const index_t tile_end_row = static_cast<index_t>(u.m_blk + 1) * Cfg::rows;
  const index_t tile_end_col = static_cast<index_t>(u.n_blk + 1) * Cfg::block_n;
  const bool rows_end_here = Cluster == 1 && tile_end_row >= u.group_rows;
  const index_t pad_row_end = rows_end_here ? cuda::round_up(tile_end_row, index_t{128}) : tile_end_row;
  const index_t pad_col_end = tile_end_col >= prm.N ? cuda::round_up(tile_end_col, index_t{128}) : tile_end_col;
  for (index_t r = row0; r < row0 + (pad_row_end - tile_end_row) + Cfg::rows; r += Cfg::rows) {
    for (index_t c = col0; c < col0 + (pad_col_end - tile_end_col) + Cfg::block_n; c += Cfg::block_n) {
      if (r != row0 || c != col0) write_padding<Cfg::consumer_n>(epi, acc, r, c);
    }
  }
}

}  // namespace detail

}  // namespace l1_gemm::sm90
