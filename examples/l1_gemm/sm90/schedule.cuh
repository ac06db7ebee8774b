#pragma once
// The sm_90a GEMM's tile scheduler: which work units (tile and K range) a CTA runs, in which
// order.
#include <cuda/ptx>

#include "plan.cuh"

namespace l1_gemm::sm90 {

constexpr int group_m = 8;  // M-blocks per raster group

namespace detail {

/// Work unit `unit` (tile-major, splits of a tile adjacent): its tile in the grouped raster
/// (M-blocks fastest within groups of `group_m`) and its K range in 64-column blocks.
struct work_unit {
  int m_blk, n_blk, tile, split, k_begin, k_end;
};
__device__ __forceinline__ work_unit unit_at(int unit, int tiles_m, int tiles_n, int splits, int k_iters) {
  work_unit u;
  u.tile = unit / splits;
  u.split = unit % splits;
  const int per_group = group_m * tiles_n;
  const int first_m = (u.tile / per_group) * group_m;
  const int rows_in_group = min(group_m, tiles_m - first_m);
  const int in_group = u.tile % per_group;
  u.m_blk = first_m + in_group % rows_in_group;
  u.n_blk = in_group / rows_in_group;
  u.k_begin = static_cast<int>(static_cast<long long>(k_iters) * u.split / splits);
  u.k_end = static_cast<int>(static_cast<long long>(k_iters) * (u.split + 1) / splits);
  return u;
}

/// The work units of a CTA. With clusters, a unit is a pair of vertically adjacent tiles; CTA
/// `rank` takes row block 2 * pair + rank (beyond M for the odd last one: zero-filled, and its
/// epilogue writes nothing but the output's padding there, which 64-row tiles rely on: see
/// `pad_beyond_tile`). Units are split `splits` ways along K.
template <class Cfg, int Cluster>
struct unit_schedule {
  int tiles_n, unit_rows, k_iters, splits, units, first, stride, rank;
  __device__ unit_schedule(const params& prm, int splits_) {
    const int tiles_m = (prm.M + Cfg::rows - 1) / Cfg::rows;
    tiles_n = (prm.N + Cfg::block_n - 1) / Cfg::block_n;
    unit_rows = (tiles_m + Cluster - 1) / Cluster;
    k_iters = (prm.K + block_k - 1) / block_k;
    splits = splits_;
    units = unit_rows * tiles_n * splits;
    first = static_cast<int>(blockIdx.x) / Cluster;
    stride = static_cast<int>(gridDim.x) / Cluster;
    rank = Cluster == 1 ? 0 : static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());
  }
  /// Unit `unit` with its row block already mapped to this CTA.
  __device__ work_unit at(int unit) const {
    work_unit u = unit_at(unit, unit_rows, tiles_n, splits, k_iters);
    u.m_blk = u.m_blk * Cluster + rank;
    return u;
  }
};

}  // namespace detail

}  // namespace l1_gemm::sm90
