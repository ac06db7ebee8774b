#pragma once
// The sm_90a GEMM's shared-memory ring: its layout, the barriers' initialisation, the producer
// that fills it by TMA and the consumers' release of its slots, and the cluster-wide meeting.
#include <cuda.h>  // CUtensorMap

#include <cuda/ptx>

#include "fp4fuse/config.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"

namespace fp4fuse::gemm::sm90 {
namespace detail {

/// The shared-memory ring of a kernel with tiles of config Cfg, aligned to the 128-byte swizzle's
/// 1024-byte period: `stages` X tiles, then `stages` W tiles, their full and empty barriers, then
/// 16 bytes the consumers use for hand-offs (split-K flags or the ping-pong order barriers).
template <class Cfg>
struct ring {
  using cfg = Cfg;
  unsigned char* a;
  unsigned char* b;
  std::uint64_t* full;
  std::uint64_t* empty;
  void* hand_off;
  __device__ explicit ring(unsigned char* smem_raw) {
    const auto raw_shared = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
    unsigned char* smem = smem_raw + ((1024 - raw_shared % 1024) % 1024);
    a = smem;
    b = smem + cfg::stages * cfg::a_stage_bytes;
    full = reinterpret_cast<std::uint64_t*>(smem + cfg::stages * cfg::stage_bytes);
    empty = full + cfg::stages;
    hand_off = empty + cfg::stages;
  }
};

/// All threads of the CTA (Cluster == 1) or of the cluster (Cluster == 2) meet.
template <int Cluster>
FP4FUSE_DEVICE void cluster_sync() {
  if constexpr (Cluster > 1) {
    cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
    cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
  } else {
    __syncthreads();
  }
}

/// Thread `thread` of the `threads` that share the work: zeroes the rows from `rows` on of every X
/// tile of the ring, which a box of `rows` rows (x_box_rows) never writes, so the MMAs read zeros
/// there as they would from a box filled out of bounds. TMA writes only rows below `rows`, so this
/// may run while it fills the ring. Rows are whole 128-byte lines under the 128-byte swizzle (it
/// permutes the 16-byte chunks within a row), so rows [rows, Cfg::rows) of a stage are its bytes
/// from rows * 128 on. The proxy fence orders each thread's stores before the MMAs' reads (async
/// proxy); the caller's barrier then orders every thread's before any MMA.
template <class Cfg>
FP4FUSE_DEVICE void zero_rows_beyond(const ring<Cfg>& r, int rows, int thread, int threads) {
  constexpr int chunks_per_stage = Cfg::a_stage_bytes / 16;
  const int first = rows * 8;  // 16-byte chunks per 128-byte row
  const int per_stage = chunks_per_stage - first;
  for (int i = thread; i < Cfg::stages * per_stage; i += threads) {
    const int stage = i / per_stage, chunk = first + i % per_stage;
    *reinterpret_cast<uint4*>(r.a + stage * Cfg::a_stage_bytes + chunk * 16) = make_uint4(0, 0, 0, 0);
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
}

/// Thread 0 initialises the ring's barriers (full: the producer's arrive + the TMA bytes; empty:
/// `empty_arrivals` per phase); then the CTA, or the cluster, synchronises so that every CTA's
/// barriers exist before any TMA multicast or remote arrive reaches them.
template <class Cfg, int Cluster>
FP4FUSE_DEVICE void init_ring(const ring<Cfg>& r, std::uint32_t empty_arrivals) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::stages; ++s) {
      cuda::ptx::mbarrier_init(&r.full[s], 1);
      cuda::ptx::mbarrier_init(&r.empty[s], empty_arrivals);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  cluster_sync<Cluster>();
}

/// The producer (one thread): the X and W tiles of every K step of the CTA's units (the
/// schedule's first, first + stride, ..., or those it takes: Schedule::takes_units), in order,
/// into the ring, from the rows each unit names (schedule.cuh: `a_row`, `b_row`). With clusters
/// along M each CTA loads half of the W tile and multicasts it to both CTAs' slots (same offsets);
/// along N (AlongN) half of the X tile. The tensor maps' boxes are the halves the producer loads
/// (launch.cuh). Tiles that skip empty fragments (config::skips_empty_fragments, in clusters
/// along N) load X in 64-row boxes, only those of fragments with rows of the unit's group
/// (detail::fragments_with_rows), rank r boxes r, r + 2, ..., multicast: both CTAs' units have
/// the same rows, so the same boxes, and each full barrier expects them all and its W tile.
/// `x_bytes`: the bytes of X each stage brings, where its box is shorter than the tile (x_box_rows).
template <class Cfg, int Cluster, bool AlongN = false, class Schedule>
FP4FUSE_DEVICE void produce(const ring<Cfg>& r, const CUtensorMap& tma_x, const CUtensorMap& tma_w,
                                        const Schedule& sched, std::uint32_t x_bytes = Cfg::a_stage_bytes) {
  using cfg = Cfg;
  constexpr int BlockN = cfg::block_n;
  static_assert(!AlongN || Cluster == 2, "produce: a cluster along N has 2 CTAs");
  static_assert(!cfg::skips_empty_fragments || AlongN, "produce: tiles that skip empty fragments share X along N");
  constexpr auto all_ctas = static_cast<std::uint16_t>((1u << Cluster) - 1);  // the multicast mask
  constexpr int box_bytes = 64 * block_k * 2;  // one 64-row X box
  int stage = 0;
  std::uint32_t phase = 0;
  for (int i = 0, unit = sched.first;; ++i, unit += sched.stride) {
    if constexpr (Schedule::takes_units) unit = sched.producer_unit(i);
    if (unit >= sched.units) break;
    const auto u = sched.at(unit);  // a work_unit (schedule.cuh)
    int x_boxes = 0;                      // skips_empty_fragments: the X boxes each stage brings
    std::uint32_t tx = x_bytes + cfg::b_stage_bytes;  // the bytes each stage's full barrier expects
    if constexpr (cfg::skips_empty_fragments) {
      x_boxes = fragments_with_rows<cfg>(u);
      tx = static_cast<std::uint32_t>(x_boxes * box_bytes + cfg::b_stage_bytes);
    }
    for (int k = u.k_begin; k < u.k_end; ++k) {
      wait_parity(&r.empty[stage], phase ^ 1);
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &r.full[stage], tx);
      if constexpr (cfg::skips_empty_fragments) {
        for (int f = sched.rank; f < x_boxes; f += Cluster) {
          const std::int32_t xc[2] = {k * block_k, u.a_row + 64 * f};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.a + stage * cfg::a_stage_bytes + f * box_bytes,
                                          &tma_x, xc, &r.full[stage], all_ctas);
        }
      } else if constexpr (Cluster == 1 || !AlongN) {
        const std::int32_t xc[2] = {k * block_k, u.a_row};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.a + stage * cfg::a_stage_bytes,
                                        &tma_x, xc, &r.full[stage]);
      } else {
        constexpr int half_rows = cfg::rows / 2;
        const std::int32_t xc[2] = {k * block_k, u.a_row + sched.rank * half_rows};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                        r.a + stage * cfg::a_stage_bytes + sched.rank * half_rows * 128, &tma_x, xc,
                                        &r.full[stage], all_ctas);
      }
      if constexpr (Cluster == 1 || AlongN) {
        const std::int32_t wc[2] = {k * block_k, u.b_row};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.b + stage * cfg::b_stage_bytes,
                                        &tma_w, wc, &r.full[stage]);
      } else {
        constexpr int half_rows = BlockN / 2;
        const std::int32_t wc[2] = {k * block_k, u.b_row + sched.rank * half_rows};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                        r.b + stage * cfg::b_stage_bytes + sched.rank * half_rows * 128, &tma_w, wc,
                                        &r.full[stage], all_ctas);
      }
      if (++stage == cfg::stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

/// A consumer's thread 0 releases a ring slot to the producer of every CTA of the cluster.
template <int Cluster>
FP4FUSE_DEVICE void release_slot(std::uint64_t* empty_slot) {
  if constexpr (Cluster == 1) {
    cuda::ptx::mbarrier_arrive(empty_slot);
  } else {
    for (int r = 0; r < Cluster; ++r) arrive_cluster(cluster_address(empty_slot, static_cast<std::uint32_t>(r)));
  }
}

}  // namespace detail

}  // namespace fp4fuse::gemm::sm90
