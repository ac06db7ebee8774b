#pragma once
// The grouped (MoE) GEMM's tile scheduler (schedule.cuh has the concept): group g, an expert,
// owns the X rows [offsets[g], offsets[g + 1]) (tokens sorted by expert) and the W rows
// [g * N, (g + 1) * N), and its output rows are its X rows. The offsets live in device memory and
// the host never reads them: every CTA reads them at kernel start, scans the groups' tile counts in
// shared memory, and walks the same sequence of work units, so a launch is independent of the
// routing (one persistent grid, capturable in a CUDA graph and replayed with other counts).
//
// Unit order: group-major (the CTAs running at one time work on a few consecutive experts, whose
// W they read from DRAM about once), and within a group the dense raster (M-blocks fastest in
// groups of 8, so that a large expert's X stays in L2 while its W strips stream past). No K split:
// a grouped launch has enough units to fill the chip.
#include <cuda/cmath>
#include <cub/block/block_scan.cuh>
#include <cuda/ptx>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/cmath.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"

namespace fp4fuse::gemm::sm90 {

/// Groups a grouped launch can have: the scan keeps three int32 per group in shared memory.
constexpr int max_groups = 1024;

namespace detail {

/// The group that owns unit `unit`: the last g with first_unit_row[g] * tiles_n <= unit, where
/// first_unit_row is the exclusive prefix sum of the groups' unit rows (empty groups have none, so
/// the search passes over them). Host and device, so the CPU tests check it.
FP4FUSE_HOST_DEVICE int group_of_unit(const std::int32_t* first_unit_row, int groups, int tiles_n, int unit) {
  int lo = 0, hi = groups;  // first_unit_row[lo] * tiles_n <= unit < first_unit_row[hi] * tiles_n
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (first_unit_row[mid] * tiles_n <= unit ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace detail

/// What the host passes to the grouped schedule: the device array of group offsets and the group
/// count (one type for every BandRows, so that launchers build it once).
struct grouped_arguments {
  const std::int32_t* offsets;  ///< [groups + 1], device memory: group g owns rows [offsets[g], offsets[g + 1])
  int groups;                   ///< 1 .. max_groups
};

/// The grouped schedule. BandRows > 0: each unit also says where its group starts in a
/// concatenation of the groups each rounded up to BandRows rows (`work_unit::group_band_row0`, the
/// prefix sum an output laid out in bands needs, such as the grouped NVFP4 scales; the schedule
/// knows nothing of what the bands hold); 0: no bands (the field is 0).
template <int BandRows = 0>
struct grouped_schedule {
  static_assert(BandRows >= 0, "grouped_schedule: BandRows >= 0");
  static constexpr int band_rows = BandRows;  ///< the bands' rows (0: none)
  using arguments = grouped_arguments;       ///< what the host passes

  /// The schedule of one CTA (schedule.cuh's concept).
  template <class Cfg, int Cluster, bool AlongN = false>
  struct cta : detail::split_k_fixup_member {  // fixup: grouped launches do not split K (prm.splits is 1), every consumer runs its epilogue
    int tiles_n;  ///< column units per group (column blocks, or pairs of them along N)
    int k_iters;  ///< K blocks of a tile
    int units;    ///< the launch's units (every group's)
    int first;    ///< this CTA's (cluster's) first unit
    int stride;   ///< units between this CTA's consecutive ones
    int rank;     ///< the CTA's rank in its cluster
    int groups;   ///< the group count
    int n_cols;   ///< N, W's rows per group
    const std::int32_t* row0;            ///< shared: offsets[g]
    const std::int32_t* first_unit_row;  ///< shared: sum over i < g of the unit rows of group i
    const std::int32_t* band_row0;       ///< shared: sum over i < g of round_up(rows_i, BandRows)

    /// All the CTA's threads (Cfg::threads): each reads up to three groups' offsets, one block-wide scan gives every
    /// group's first unit row and (BandRows > 0) its first row in the banded concatenation. A
    /// routing that is not a prefix sum within [0, M] (decreasing offsets, or beyond the X rows)
    /// traps: the output would be wrong, and no status can be returned from a kernel.
    __device__ cta(const params& prm, const arguments& args, int /*splits: grouped launches do not split K*/) {
      __shared__ std::int32_t s_row0[max_groups + 1], s_unit[max_groups + 1], s_padded[max_groups + 1];
      using scan_t = cub::BlockScan<unsigned long long, Cfg::threads>;
      __shared__ typename scan_t::TempStorage scan_storage;
      static_assert(sizeof s_row0 + sizeof s_unit + sizeof s_padded + sizeof scan_storage + Cfg::smem_bytes <= max_smem_per_cta,
                    "grouped_schedule: the group scan and the ring must fit in a CTA's shared memory (lower max_groups)");
      constexpr int per_thread = (max_groups + Cfg::threads) / Cfg::threads;  // covers index `groups` too
      groups = args.groups;
      // Per group: unit rows in the low word, banded rows in the high word (both sums stay below
      // 2^31: the launcher bounds M and the group count).
      unsigned long long mine[per_thread], sum = 0;
      const int base = static_cast<int>(threadIdx.x) * per_thread;
#pragma unroll
      for (int i = 0; i < per_thread; ++i) {
        const int g = base + i;
        mine[i] = 0;
        if (g <= groups) {
          const std::int32_t begin = args.offsets[g];
          s_row0[g] = begin;
          if (g < groups) {
            const std::int32_t end = args.offsets[g + 1];
            if (begin < 0 || end < begin || end > prm.M) __trap();  // not a routing of M rows
            const int rows = end - begin;
            const int tiles_m = cuda::ceil_div(rows, Cfg::rows);
            const unsigned long long unit_rows = static_cast<unsigned>(cuda::ceil_div(tiles_m, AlongN ? 1 : Cluster));
            const unsigned long long padded = BandRows > 0 ? static_cast<unsigned>(fp4fuse::detail::round_up(rows, BandRows > 0 ? BandRows : 1)) : 0u;
            mine[i] = unit_rows | (padded << 32);
          }
        }
        sum += mine[i];
      }
      unsigned long long before = 0;
      scan_t(scan_storage).ExclusiveSum(sum, before);
#pragma unroll
      for (int i = 0; i < per_thread; ++i) {
        const int g = base + i;
        if (g <= groups) {
          s_unit[g] = static_cast<std::int32_t>(before & 0xFFFFFFFFu);
          s_padded[g] = static_cast<std::int32_t>(before >> 32);
        }
        before += mine[i];
      }
      __syncthreads();
      row0 = s_row0;
      first_unit_row = s_unit;
      band_row0 = s_padded;
      n_cols = prm.N;
      tiles_n = cuda::ceil_div(cuda::ceil_div(prm.N, Cfg::block_n), AlongN ? Cluster : 1);
      k_iters = cuda::ceil_div(prm.K, block_k);
      units = s_unit[groups] * tiles_n;
      first = static_cast<int>(blockIdx.x) / Cluster;
      stride = static_cast<int>(gridDim.x) / Cluster;
      rank = Cluster == 1 ? 0 : static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());
    }

    /// Unit `unit`: its group by binary search over the shared prefix sums, then the dense raster
    /// within the group; with clusters along M a unit is a pair of the group's row blocks, CTA
    /// `rank` taking 2 * pair + rank (beyond the group's rows for an odd last one: its epilogue
    /// writes only the group's padding there); along N a pair of column blocks.
    __device__ work_unit at(int unit) const {
      const int g = detail::group_of_unit(first_unit_row, groups, tiles_n, unit);
      const int unit_rows = first_unit_row[g + 1] - first_unit_row[g];
      work_unit u = detail::unit_at(unit - first_unit_row[g] * tiles_n, unit_rows, tiles_n, 1, k_iters);
      u.tile = unit;  // no split-K workspace in grouped launches
      detail::place_in_cluster<Cluster, AlongN>(u, rank);
      u.a_row = row0[g] + u.m_blk * Cfg::rows;
      u.b_row = g * n_cols + u.n_blk * Cfg::block_n;
      u.group = g;
      u.group_row0 = row0[g];
      u.group_rows = row0[g + 1] - row0[g];
      u.group_band_row0 = band_row0[g];
      return u;
    }
  };
};

}  // namespace fp4fuse::gemm::sm90
