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
//
// Who runs which unit (`unit_order`): either fixed at launch (cluster c runs units c, c + C, ...
// of the C clusters), or taken at run time from a counter in device memory, each cluster taking
// the next unit when it is ready for one, so the units the chip runs at one time stay a window of
// consecutive units however the clusters' speeds drift apart. The units that share a W strip or
// an expert's X then run together and read it from DRAM about once; with the fixed order, a few
// units of drift spread them over more of the raster than the L2 holds (bench/results/engine15.md
// measured twice the needed DRAM bytes, engine16.md the time the taken order saves).
#include <cuda/cmath>
#include <cub/block/block_scan.cuh>
#include <cuda/ptx>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/cmath.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
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

/// How a grouped launch's clusters get their units.
enum class unit_order {
  fixed,  ///< cluster c of the grid's C runs units c, c + C, c + 2C, ...
  taken,  ///< each cluster takes the next unit from a counter in device memory when it is ready for one
};

/// What the host passes to the grouped schedule: the device array of group offsets, the group
/// count and, for unit_order::taken, the counter (one type for every schedule, so that launchers
/// build it once).
struct grouped_arguments {
  const std::int32_t* offsets;  ///< [groups + 1], device memory: group g owns rows [offsets[g], offsets[g + 1])
  int groups;                   ///< 1 .. max_groups
  /// unit_order::taken: one word of device memory, zero before the launch; the launch leaves it
  /// zero (its last taker resets it), so one counter serves any number of launches that do not
  /// overlap. Ignored by unit_order::fixed.
  unsigned* counter = nullptr;
};

namespace detail {

/// The queue through which the taker (a thread of rank 0's producer warpgroup) hands the units it
/// takes from the counter to the producer and the consumers of every CTA of the cluster: entry i
/// (slot i % depth) holds the cluster's i-th unit. `full[s]` (in each CTA) completes when the
/// taker has written the slot, `empty[s]` (rank 0's) when every reader of the cluster has read it.
struct unit_queue {
  /// Entries: the taker takes unit i once the consumers of unit i - 2 have started it, about a
  /// unit's mainloop before the producer loads unit i (the atomic's latency off the producer's
  /// path), and a cluster holds at most two units it has not started.
  static constexpr int depth = 2;
  std::uint64_t full[depth];
  std::uint64_t empty[depth];
  int unit[depth];
};

}  // namespace detail

/// The grouped schedule. BandRows > 0: each unit also says where its group starts in a
/// concatenation of the groups each rounded up to BandRows rows (`work_unit::group_band_row0`, the
/// prefix sum an output laid out in bands needs, such as the grouped NVFP4 scales; the schedule
/// knows nothing of what the bands hold); 0: no bands (the field is 0). `Order`: who runs which
/// unit (unit_order; `taken` needs `arguments::counter`, and the kernel says through `cta`'s
/// UnitWarpgroups how many consumer warpgroups read each unit).
template <int BandRows = 0, unit_order Order = unit_order::fixed>
struct grouped_schedule {
  static_assert(BandRows >= 0, "grouped_schedule: BandRows >= 0");
  static constexpr int band_rows = BandRows;  ///< the bands' rows (0: none)
  using arguments = grouped_arguments;       ///< what the host passes

  /// The schedule of one CTA (schedule.cuh's concept).
  template <class Cfg, int Cluster, bool AlongN = false, int UnitWarpgroups = 1>
  struct cta : detail::split_k_fixup_member {  // fixup: grouped launches do not split K (prm.splits is 1), every consumer runs its epilogue
    static_assert(UnitWarpgroups >= 1 && UnitWarpgroups <= 3, "grouped_schedule: each unit is run by 1 to 3 consumer warpgroups");
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
    unsigned* counter;                   ///< unit_order::taken: arguments::counter
    detail::unit_queue* queue;           ///< unit_order::taken: shared
    /// Whether the CTA's units come from the counter (producer_unit, consumer_unit) rather than
    /// from `first` and `stride`.
    static constexpr bool takes_units = Order == unit_order::taken;
    /// unit_order::taken: the readers of each queue entry per CTA, the producer and lane 0 of each
    /// of the four warps of every consumer warpgroup that runs the unit (the ping-pong kernel's
    /// one, the cooperative kernel's two or three).
    static constexpr std::uint32_t queue_readers_per_cta = 1 + 4 * UnitWarpgroups;

    /// All the CTA's threads (Cfg::threads): each reads up to three groups' offsets, one block-wide scan gives every
    /// group's first unit row and (BandRows > 0) its first row in the banded concatenation. A
    /// routing that is not a prefix sum within [0, M] (decreasing offsets, or beyond the X rows)
    /// traps: the output would be wrong, and no status can be returned from a kernel.
    __device__ cta(const params& prm, const arguments& args, int /*splits: grouped launches do not split K*/) {
      __shared__ std::int32_t s_row0[max_groups + 1], s_unit[max_groups + 1], s_padded[max_groups + 1];
      using scan_t = cub::BlockScan<unsigned long long, Cfg::threads>;
      __shared__ typename scan_t::TempStorage scan_storage;
      static_assert(sizeof s_row0 + sizeof s_unit + sizeof s_padded + sizeof scan_storage + sizeof(detail::unit_queue) + Cfg::smem_bytes <=
                        max_smem_per_cta,
                    "grouped_schedule: the group scan, the unit queue and the ring must fit in a CTA's shared memory (lower max_groups)");
      counter = args.counter;
      queue = nullptr;
      if constexpr (takes_units) {
        __shared__ detail::unit_queue s_queue;
        queue = &s_queue;
        // Thread 0 initialises the barriers here; the kernel's init_ring, after this constructor,
        // fences barrier initialisation and syncs the cluster before any thread uses them.
        if (threadIdx.x == 0) {
          for (int i = 0; i < detail::unit_queue::depth; ++i) {
            cuda::ptx::mbarrier_init(&s_queue.full[i], 1);
            cuda::ptx::mbarrier_init(&s_queue.empty[i], static_cast<std::uint32_t>(Cluster * queue_readers_per_cta));
          }
        }
      }
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

    /// unit_order::taken, one thread of each CTA's producer warpgroup other than the producer's:
    /// in rank 0, takes the cluster's units from the counter into every CTA's queue, in order,
    /// until it has handed `units` (none left) to every consumer warpgroup; in rank 1, nothing.
    __device__ void take_units() const {
      static_assert(takes_units, "grouped_schedule::take_units: unit_order::taken only");
      if (rank != 0) return;
      bool all_taken = false;
      // `units` at two consecutive entries, e and e + 1: in the ping-pong kernel the producer and
      // consumer e % 2 stop at e, the other consumer at e + 1; in the cooperative kernel every
      // reader stops at e. Entry e + 1's empty phase never completes: nothing waits on it.
      for (int j = 0, ends = 0; ends < 2; ++j) ends += take(j, all_taken) ? 1 : 0;
    }

    /// unit_order::taken, the producer thread: the CTA's i-th unit (i = 0, 1, ...; `units` once
    /// none is left), the same in both CTAs of a cluster.
    __device__ int producer_unit(int i) const {
      static_assert(takes_units, "grouped_schedule::producer_unit: unit_order::taken only");
      const int unit = read(i);
      detail::arrive_at_rank<Cluster>(&queue->empty[i % detail::unit_queue::depth], 0, rank);
      return unit;
    }

    /// unit_order::taken, every thread of each consumer warpgroup that runs the CTA's i-th unit:
    /// that unit (`units` once none is left). Lane 0 of each warp reads the entry, frees it and
    /// hands the unit to its warp by shuffle, so no other lane touches the entry (a lane's read
    /// ordered before lane 0's release only by a __syncwarp, which the compiler may drop in
    /// converged code, is a race to compute-sanitizer's racecheck).
    __device__ int consumer_unit(int i) const {
      static_assert(takes_units, "grouped_schedule::consumer_unit: unit_order::taken only");
      int unit = 0;
      if (threadIdx.x % 32 == 0) {
        unit = read(i);
        detail::arrive_at_rank<Cluster>(&queue->empty[i % detail::unit_queue::depth], 0, rank);
      }
      return __shfl_sync(0xFFFFFFFFu, unit, 0);
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

   private:
    /// The queue's entry i, once rank 0's producer has written it.
    __device__ int read(int i) const {
      const int slot = i % detail::unit_queue::depth;
      detail::wait_parity_cluster(&queue->full[slot], static_cast<std::uint32_t>(i / detail::unit_queue::depth) & 1u);
      return *static_cast<volatile int*>(&queue->unit[slot]);
    }

    /// Rank 0's taker: entry j of every CTA's queue gets the counter's next unit, or `units` once
    /// they are all taken (returns true then). Each cluster takes exactly one value at or beyond
    /// `units` (it then stops), so the launch's last take is the one that returns
    /// units + clusters - 1, and that cluster resets the counter for the next launch: no other
    /// cluster takes again.
    __device__ bool take(int j, bool& all_taken) const {
      const int slot = j % detail::unit_queue::depth;
      // The entry's previous readers (of the cluster's unit j - depth) are done with it.
      detail::wait_parity_cluster(&queue->empty[slot], (static_cast<std::uint32_t>(j / detail::unit_queue::depth) & 1u) ^ 1u);
      int unit = units;
      if (!all_taken) {
        const unsigned ticket = atomicAdd(counter, 1u);
        if (ticket < static_cast<unsigned>(units)) {
          unit = static_cast<int>(ticket);
        } else {
          all_taken = true;
          if (ticket == static_cast<unsigned>(units) + gridDim.x / Cluster - 1) atomicExch(counter, 0u);
        }
      }
      for (int r = 0; r < Cluster; ++r) {  // the taker is rank 0
        if (r == 0) {
          *static_cast<volatile int*>(&queue->unit[slot]) = unit;
        } else {
          *static_cast<volatile int*>(__cluster_map_shared_rank(&queue->unit[slot], static_cast<unsigned>(r))) = unit;
        }
        detail::arrive_at_rank<Cluster>(&queue->full[slot], r, 0);  // release: the unit's store before the arrival
      }
      return unit == units;
    }
  };
};

}  // namespace fp4fuse::gemm::sm90
