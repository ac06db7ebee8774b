#pragma once
// The sm_90a GEMM's tile scheduler: which work units (a tile and a range of its K blocks) a CTA
// runs, in which order, and where each unit's operands and output lie. The kernels take the
// schedule as a template parameter, so that a grouped (MoE) GEMM, whose tiles belong to groups
// of rows with their own W and output, runs the same kernels with a schedule of its own.
//
// A schedule is a type S with
//
//   S::arguments   what the host passes to the kernel for it (a kernel parameter: trivially
//                  copyable; an empty struct where the schedule needs nothing but `params`).
//   S::cta<Cfg, Cluster, AlongN, UnitWarpgroups>
//                  the schedule of one CTA of a kernel with tiles of config Cfg (plan.cuh) in
//                  clusters of Cluster CTAs along M (AlongN false) or N (true), each unit run by
//                  UnitWarpgroups consumer warpgroups (the cooperative kernel's Cfg::consumers,
//                  the ping-pong kernel's 1), with:
//     __device__ cta(const params& prm, const S::arguments& args, int splits)
//                  run by all Cfg::threads threads of the CTA at kernel start, before the ring's barriers
//                  are initialised and the warpgroups take their roles: it may read device
//                  memory, use static __shared__ storage (the ring leaves 227 KiB -
//                  Cfg::smem_bytes; the staged-store kernels' buffers leave only 1 KiB of it,
//                  and the dense schedule, the only one they run, uses none) and
//                  __syncthreads(). `splits`: the K split (1 for the
//                  ping-pong kernel, prm.splits for the cooperative one).
//     int units, first, stride
//                  the CTA's units are first, first + stride, ... below units (the ping-pong
//                  kernel's consumer c takes every other one, from first + c * stride). `units`
//                  may depend on data (the grouped schedule's tiles per group); the launch sizes
//                  the grid by an upper bound.
//     static constexpr bool takes_units
//                  true: the CTA's units are not first + i * stride but taken at run time
//                  (grouped_schedule's unit_order::taken): the kernel runs `void take_units()`
//                  in one thread of its producer warpgroup (not the producer) and asks for its
//                  i-th unit with `int producer_unit(int i)` (its producer thread) and
//                  `int consumer_unit(int i)` (each consumer warpgroup that runs it), each
//                  returning `units` once none is left. The cooperative kernel's tiles with one
//                  consumer (64 x 32, 64 x 48) and the swap-AB kernel refuse such a schedule.
//     int rank     the CTA's rank in its cluster (0 without clusters): which half of the shared
//                  operand's tile (W along M, X along N) its producer loads and multicasts.
//     int k_iters  the 64-column K blocks of a whole unit: the ping-pong kernel, which does not
//                  split K, runs exactly k_iters K steps per unit ([0, k_iters)).
//     __device__ work_unit at(int unit) const
//                  the unit at index `unit`, called by the producer and by each consumer for the
//                  same indices, so a pure function of `unit` (and of the constructor's state).
//     __device__ bool fixup(float (&acc)[R], const work_unit& u, const params& prm, index_t row0,
//                           int consumer, int thread, int* flags) const
//                  after a consumer warpgroup's mainloop of unit u (its part of the tile from
//                  output row row0): whether it runs the epilogue on `acc`. A schedule that
//                  splits K reduces the splits here (the cooperative kernel only calls it;
//                  `flags`: one int per consumer in shared memory); one that does not returns true.
//
// and these promises: the CTAs of a cluster get the same number of units and, unit by unit, the
// same K range and the same rows of the shared operand (W rows along M, X rows along N: they share
// that tile by multicast and release ring slots together); the
// units of one tile that splits K have the same `tile` and splits 0 .. splits - 1, and `tile` is
// below the tile count the split-K workspace was sized for (workspace.cuh).
#include <cuda/cmath>
#include <cuda/ptx>

#include "fp4fuse/config.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"

namespace fp4fuse::gemm::sm90 {

constexpr int group_m = 8;  // M-blocks per raster group

/// What the kernels need of a work unit. Tile coordinates count within the unit's group, and so
/// do the epilogue's rows (epilogue.cuh: `epilogue_for` binds the group's output); a dense GEMM
/// is one group of M rows.
struct work_unit {
  int m_blk;         ///< the tile's row block within its group
  int n_blk;         ///< the tile's column block
  int tile;          ///< the tile's index among the launch's tiles: its split-K workspace slot
  int split;         ///< which of the tile's K splits (0 without a split)
  int k_begin;       ///< its first K block of 64 columns
  int k_end;         ///< one past its last K block
  int a_row;         ///< the first X row of the tile (the producer's TMA coordinate)
  int b_row;         ///< the first W row of the tile; with clusters, CTA `rank` loads its half from b_row + rank * BlockN / 2
  int group;         ///< the group (expert) the tile belongs to
  int group_row0;    ///< the output (and X) row where the group starts
  int group_rows;    ///< rows in the group: rows at or beyond it are the output's padding
  int group_band_row0;  ///< the group's first row in a concatenation of the groups each rounded up to the schedule's band rows (0 without bands)
};

namespace detail {

/// The 64-row fragments of unit `u`'s tile (of config Cfg) that hold rows of its group: the
/// fragments a tile that skips empty ones (config::skips_empty_fragments) loads X for and issues
/// MMAs for; the others lie wholly beyond the group's rows (its ragged end).
template <class Cfg>
FP4FUSE_HOST_DEVICE int fragments_with_rows(const work_unit& u) {
  const int rows_left = u.group_rows - u.m_blk * Cfg::rows;  // >= 1: a unit's tile holds rows of its group
  const int with_rows = cuda::ceil_div(rows_left, 64);
  return with_rows < Cfg::rows / 64 ? with_rows : Cfg::rows / 64;
}

/// Work unit `unit` (tile-major, splits of a tile adjacent): its tile in the grouped raster
/// (M-blocks fastest within groups of `group_m`) and its K range in 64-column blocks. Fills the
/// raster's fields only (m_blk, n_blk, tile, split, k_begin, k_end), in units of the cluster's
/// tiles (`place_in_cluster` maps them to the CTA's). Host and device, so the CPU tests check it.
FP4FUSE_HOST_DEVICE work_unit unit_at(int unit, int tiles_m, int tiles_n, int splits, int k_iters) {
  work_unit u;
  u.tile = unit / splits;
  u.split = unit % splits;
  const int per_group = group_m * tiles_n;
  const int first_m = (u.tile / per_group) * group_m;
  const int rows_in_group = tiles_m - first_m < group_m ? tiles_m - first_m : group_m;
  const int in_group = u.tile % per_group;
  u.m_blk = first_m + in_group % rows_in_group;
  u.n_blk = in_group / rows_in_group;
  u.k_begin = static_cast<int>(static_cast<long long>(k_iters) * u.split / splits);
  u.k_end = static_cast<int>(static_cast<long long>(k_iters) * (u.split + 1) / splits);
  return u;
}

/// The split-K fixup of a consumer warpgroup's fragment of unit u: each split publishes it to the
/// workspace (prm.partials), and the last split of the tile to arrive (prm.counters, reset for the
/// next launch) sums every split's in index order, so the bits do not depend on arrival order, and
/// runs the epilogue (true). Rows wholly beyond the group's (row0 >= u.group_rows): only split 0
/// runs the epilogue (it writes nothing but the padding there, whatever the sums). prm.splits <= 1:
/// true, nothing else (the schedules' one implementation of the reduction; the grouped schedule's
/// launches never split, and keeping the same code there keeps the kernels' mainloop as tuned).
template <int Registers>
FP4FUSE_DEVICE bool split_k_fixup(float (&acc)[Registers], const work_unit& u, const params& prm, index_t row0, int consumer,
                                              int thread, int* flags) {
  if (prm.splits <= 1) return true;
  if (row0 >= u.group_rows) return u.split == 0;
  const std::size_t slot = (static_cast<std::size_t>(u.tile) * 2 + consumer) * prm.splits;
  float* mine = prm.partials + (slot + u.split) * (Registers * 128);
#pragma unroll
  for (int i = 0; i < Registers; ++i) __stcg(mine + i * 128 + thread, acc[i]);
  __threadfence();
  warpgroup_sync(consumer);
  if (thread == 0) {
    unsigned* counter = prm.counters + u.tile * 2 + consumer;
    const unsigned arrived = atomicAdd(counter, 1u);
    const bool last = arrived == static_cast<unsigned>(prm.splits - 1);
    if (last) *counter = 0;  // ready for the next launch
    flags[consumer] = last;
  }
  warpgroup_sync(consumer);
  if (!flags[consumer]) return false;
  __threadfence();
#pragma unroll
  for (int i = 0; i < Registers; ++i) acc[i] = 0.0f;
  for (int s = 0; s < prm.splits; ++s) {
    const float* part = prm.partials + (slot + s) * (Registers * 128);
#pragma unroll
    for (int i = 0; i < Registers; ++i) acc[i] += __ldcg(part + i * 128 + thread);
  }
  return true;
}

/// The schedule concept's `fixup` member, written once: a base of each schedule's `cta`. Both
/// schedules run `split_k_fixup`; the grouped one never splits K, but without the call in the
/// kernel the compiler keeps the cooperative kernel's ring descriptors in vector registers (12
/// more instructions per K step of 64 x 256 tiles, SASS compared, bench/HISTORY.md).
struct split_k_fixup_member {
  /// detail::split_k_fixup. Without a split: true.
  template <int Registers>
  FP4FUSE_DEVICE bool fixup(float (&acc)[Registers], const work_unit& u, const params& prm, index_t row0, int consumer,
                                        int thread, int* flags) const {
    return split_k_fixup(acc, u, prm, row0, consumer, thread, flags);
  }
};

/// Maps a cluster's tile (m_blk, n_blk of `unit_at`) to the tile of the CTA of rank `rank`: a
/// cluster along M takes row blocks Cluster * m_blk + rank, one along N column blocks
/// Cluster * n_blk + rank.
template <int Cluster, bool AlongN>
FP4FUSE_HOST_DEVICE void place_in_cluster(work_unit& u, int rank) {
  if constexpr (AlongN) {
    u.n_blk = u.n_blk * Cluster + rank;
  } else {
    u.m_blk = u.m_blk * Cluster + rank;
  }
}

}  // namespace detail

/// The dense GEMM's schedule: one group of M rows, the tiles in the grouped raster.
struct dense_schedule {
  /// Nothing beyond `params`.
  struct arguments {};

  /// The work units of a CTA. With clusters along M, a unit is a pair of vertically adjacent
  /// tiles; CTA `rank` takes row block 2 * pair + rank (beyond M for the odd last one: zero-filled,
  /// and its epilogue writes nothing but the output's padding there, which 64-row tiles rely on:
  /// see `pad_beyond_tile`); along N the same with column blocks. Units are split `splits` ways
  /// along K.
  template <class Cfg, int Cluster, bool AlongN = false, int UnitWarpgroups = 1>
  struct cta : detail::split_k_fixup_member {  // fixup: split K (detail::split_k_fixup)
    static_assert(UnitWarpgroups <= 2,
                  "dense_schedule: split K keeps two consumer warpgroups' partial sums per tile (split_k_fixup's tile * 2 + consumer, "
                  "workspace::size_for's tiles * 2): a tile of more consumers (192 rows) needs both widened first");
    int tiles_n;    ///< column units (column blocks, or pairs of them along N)
    int unit_rows;  ///< row units (row blocks, or pairs of them along M)
    int k_iters;    ///< K blocks of a whole tile
    int splits;     ///< K splits
    int units;      ///< the launch's units
    int first;      ///< this CTA's (cluster's) first unit
    int stride;     ///< units between this CTA's consecutive ones
    int rank;       ///< the CTA's rank in its cluster
    int rows;       ///< M
    static constexpr bool takes_units = false;  ///< units first, first + stride, ...
    /// All threads of the CTA, at kernel start (the concept above).
    __device__ cta(const params& prm, const arguments&, int splits_) {
      const int tiles_m = cuda::ceil_div(prm.M, Cfg::rows);
      tiles_n = cuda::ceil_div(cuda::ceil_div(prm.N, Cfg::block_n), AlongN ? Cluster : 1);
      unit_rows = cuda::ceil_div(tiles_m, AlongN ? 1 : Cluster);
      k_iters = cuda::ceil_div(prm.K, block_k);
      splits = splits_;
      units = unit_rows * tiles_n * splits;
      first = static_cast<int>(blockIdx.x) / Cluster;
      stride = static_cast<int>(gridDim.x) / Cluster;
      rank = Cluster == 1 ? 0 : static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());
      rows = prm.M;
    }
    /// Unit `unit` with its row block already mapped to this CTA.
    __device__ work_unit at(int unit) const {
      work_unit u = detail::unit_at(unit, unit_rows, tiles_n, splits, k_iters);
      detail::place_in_cluster<Cluster, AlongN>(u, rank);
      u.a_row = u.m_blk * Cfg::rows;
      u.b_row = u.n_blk * Cfg::block_n;
      u.group = 0;
      u.group_row0 = 0;
      u.group_rows = rows;
      u.group_band_row0 = 0;
      return u;
    }
  };
};

}  // namespace fp4fuse::gemm::sm90
