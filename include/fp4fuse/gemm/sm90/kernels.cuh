#pragma once
// The sm_90a GEMM's kernel layer: persistent warp-specialized kernels composed of the collectives
// (the producer and ring of ring.cuh, the consumer mainloop of mainloop.cuh, the epilogue
// collective of epilogue.cuh, the staged store of staged_store.cuh) and a tile scheduler
// (schedule.cuh): the cooperative one (all of config's consumer warpgroups on one tile, K split
// optional) and the ping-pong one (each consumer its own tile), each in two forms (its epilogue by
// value, or a staged BF16 store as __grid_constant__: gemm_staged_kernel,
// gemm_pingpong_staged_kernel), one body each. Compiled for any other target they trap.
#include <cuda.h>  // CUtensorMap

#include <cuda/ptx>

#include <fp4fuse/config.cuh>

#include "fp4fuse/gemm/sm90/epilogue.cuh"
#include "fp4fuse/gemm/sm90/mainloop.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/sm90/ring.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"
#include "fp4fuse/gemm/sm90/staged_store.cuh"

namespace fp4fuse::gemm::sm90 {

namespace detail {
/// The cooperative kernel's body, shared by gemm_kernel and gemm_staged_kernel; compiled for any
/// other target it traps. `prm` and `sched_args` by value: so the kernels' code is what it was as
/// one function (SASS compared; by reference the compiler keeps some of their values in vector
/// registers); `epi` by reference: a staged epilogue's tensor map must stay in parameter space.
template <int BlockM, int BlockN, int Cluster, class Schedule, class Epilogue, bool AlongN>
FP4FUSE_DEVICE void cooperative_body(const CUtensorMap& tma_x, const CUtensorMap& tma_w, params prm, const Epilogue& epi,
                                                 typename Schedule::arguments sched_args) {
#if FP4FUSE_ARCH_IS_SM90A
  static_assert(Cluster == 1 || Cluster == 2, "clusters of 1 or 2 CTAs");
  static_assert(!AlongN || Cluster == 2, "a cluster along N has 2 CTAs");
  using cfg = config<BlockN, BlockM>;
  constexpr bool staged = detail::is_staged<Epilogue>;
  static_assert(!staged || (BlockM == 128 && !cfg::consumers_split_n),
                "gemm_staged_kernel: the staged store takes 128-row tiles (each consumer warpgroup stores 64 whole rows)");
  extern __shared__ unsigned char smem_raw[];
  const detail::ring<cfg> ring(smem_raw);
  auto* last_flag = static_cast<int*>(ring.hand_off);
  // Constructed by all threads together, before the roles split (schedule.cuh); each of the
  // Cfg::consumers consumer warpgroups runs every unit.
  const typename Schedule::template cta<cfg, Cluster, AlongN, cfg::consumers> sched(prm, sched_args, prm.splits);
  static_assert(!decltype(sched)::takes_units || !cfg::single_consumer,
                "gemm_kernel: a schedule that takes its units at run time is read by every consumer warpgroup of the CTA, and the 64 x 32 "
                "and 64 x 48 tiles' second, idle one runs no unit");
  const int warpgroup = detail::warpgroup_index();
  if (threadIdx.x == 0) {
    detail::prefetch_tensor_map(tma_x);
    detail::prefetch_tensor_map(tma_w);
    detail::prefetch_epilogue(epi);
  }
  // A lone 64-row tile over fewer rows of X (decode): X's box stops at M (x_box_rows), and the
  // consumers zero the ring's rows beyond while the producer's first loads are in flight.
  const int x_rows = x_box_rows<cfg, Cluster>(prm.M);
  detail::init_ring<cfg, Cluster>(ring, cfg::consumers * Cluster);  // empty: each consumer warpgroup of the cluster

  if (warpgroup == 0) {
    detail::setmaxnreg_dec<cfg::producer_registers>();
    if (threadIdx.x == 0) detail::produce<cfg, Cluster, AlongN>(ring, tma_x, tma_w, sched, static_cast<std::uint32_t>(x_rows) * 128);
    if constexpr (decltype(sched)::takes_units) {
      if (threadIdx.x == 32) sched.take_units();  // another warp: the counter's latency stays off the producer's path
    }
  } else {
    detail::setmaxnreg_inc<cfg::consumer_registers>();
    if constexpr (x_box_may_be_short<cfg, Cluster>) {
      static_assert(cfg::consumers <= 3, "named barriers 1 .. 3 are the consumers' warpgroup_sync, 4 is consumers_sync");
      if (x_rows < cfg::rows) {  // before any MMA of any consumer
        detail::zero_rows_beyond(ring, x_rows, static_cast<int>(threadIdx.x) - 128, cfg::threads - 128);
        detail::consumers_sync<cfg::threads - 128>();
      }
    }
    constexpr int registers = cfg::registers;
    // 128- and 192-row tiles: consumer c computes rows 64c .. 64c + 63; 64-row tiles: columns
    // c * BlockN / 2 onwards (the same X tile, its half of the W tile); 64 x 32, 64 x 48: consumer 0 all.
    const int consumer = warpgroup - 1;
    const int thread = static_cast<int>(threadIdx.x % 128);
    const bool leader = detail::warpgroup_leader();
    const detail::mainloop<cfg, Cluster, 1, 1> mma{
        detail::descriptor_low(ring.a + (cfg::consumers_split_n ? 0 : consumer * 64 * 128)),
        detail::descriptor_low(ring.b + (cfg::consumers_split_n ? consumer * cfg::consumer_n * 128 : 0)), leader, thread};
    detail::ring_cursor cursor;
    const bool active = consumer < cfg::consumers;  // 64 x 32, 64 x 48 tiles: the second consumer has no MMAs
    // ... and, where the epilogue writes its padding without accumulators (`padding_beyond`), writes the
    // padding beyond each tile while the first consumer runs the mainloop: at decode every CTA's
    // tile ends at the edge, and its padding would otherwise follow its epilogue (measured: about
    // 190 of the 1,000 instructions a consumer warp issues after the mainloop, one warp per scheduler).
    constexpr bool helper_pads = cfg::single_consumer && detail::has_padding<detail::unit_epilogue<Epilogue>, cfg::consumer_n>;
    // The CTA's i-th unit: first + i * stride, or the i-th one the schedule takes.
    for (int i = 0, unit = active ? sched.first : sched.units;; ++i, unit += sched.stride) {
      if constexpr (decltype(sched)::takes_units) unit = sched.consumer_unit(i);
      if (unit >= sched.units) break;
      const work_unit u = sched.at(unit);
      float acc[1][registers];
      decltype(mma)::clear(acc);
      cursor.previous = -1;
      // 192-row tiles: rows wholly beyond the group's (an expert's ragged end) take no MMAs, and
      // their epilogue only writes the group's in-band padding (warpgroup_epilogue). Other tiles:
      // always true.
      bool has_rows = true;
      if constexpr (cfg::skips_empty_fragments) has_rows = consumer < detail::fragments_with_rows<cfg>(u);
      if (has_rows) {
        mma.run(ring, acc, u.k_end - u.k_begin, cursor);
      } else {
        mma.pass(ring, u.k_end - u.k_begin, cursor);
      }
      mma.drain(ring, acc, u.k_end - u.k_begin, cursor);

      // The warpgroup's part of the tile, in rows of the unit's group (the epilogue's rows).
      const index_t row0 = static_cast<index_t>(u.m_blk) * BlockM + (cfg::consumers_split_n ? 0 : 64 * consumer);
      const index_t col0 = static_cast<index_t>(u.n_blk) * BlockN + (cfg::consumers_split_n ? consumer * cfg::consumer_n : 0);
      // A unit that splits K: the schedule's fixup reduces the splits; the last split to arrive runs the epilogue.
      if (!sched.fixup(acc[0], u, prm, row0, consumer, thread, last_flag)) continue;
      if constexpr (staged) {  // a dense launch: the unit's rows are D's
        unsigned char* buffer = detail::staging_buffer(ring, consumer);
        detail::staged_fragment_store<cfg::consumer_n>(epi.map, acc[0], row0, col0, buffer, thread, consumer);
      } else {
        const auto& tile_epi = detail::epilogue_for(epi, u);
        detail::warpgroup_epilogue<cfg::consumer_n>(tile_epi, acc[0], has_rows, row0, col0);
        if constexpr (!helper_pads) detail::pad_beyond_tile<cfg, Cluster, AlongN>(tile_epi, u, prm, row0, col0);
      }
    }
    if constexpr (staged) {
      if (thread == 0) fp4fuse::wait_staged_stores();  // the staging must outlive TMA's last read
    }
    if constexpr (helper_pads) {
      if (!active) {
        // The idle consumer writes the padding beyond every unit's tile (split 0 stands for its tile).
        for (int unit = sched.first; unit < sched.units; unit += sched.stride) {
          const work_unit u = sched.at(unit);
          if (u.split != 0) continue;
          detail::pad_beyond_tile<cfg, Cluster, AlongN>(detail::epilogue_for(epi, u), u, prm,
                                                static_cast<index_t>(u.m_blk) * BlockM, static_cast<index_t>(u.n_blk) * BlockN);
        }
      }
    }
  }
  // No CTA may leave while its peer can still multicast into it or arrive on its barriers.
  if constexpr (Cluster > 1) detail::cluster_sync<Cluster>();
#else
  (void)tma_x, (void)tma_w, (void)prm, (void)epi, (void)sched_args;
  __trap();  // built for a target without wgmma: never write nothing silently
#endif
}

/// The ping-pong kernel's body, shared by gemm_pingpong_kernel and gemm_pingpong_staged_kernel;
/// compiled for any other target it traps.
template <int Cluster, int InFlight, class Schedule, class Epilogue, bool AlongN>
FP4FUSE_DEVICE void pingpong_body(const CUtensorMap& tma_x, const CUtensorMap& tma_w, const params& prm, const Epilogue& epi,
                                              const typename Schedule::arguments& sched_args) {
#if FP4FUSE_ARCH_IS_SM90A
  static_assert(Cluster == 1 || Cluster == 2, "clusters of 1 or 2 CTAs");
  static_assert(!AlongN || Cluster == 2, "a cluster along N has 2 CTAs");
  static_assert(InFlight == 1 || InFlight == 2, "1 or 2 K steps of MMAs in flight");
  constexpr int block_n = 128;
  using cfg = config<block_n>;
  static_assert(cfg::threads == 384, "gemm_pingpong_kernel: a producer warpgroup and two consumer warpgroups, each consumer a whole tile");
  static_assert(detail::tiles_cover_padding<detail::unit_epilogue<Epilogue>, block_m, block_n>,
                "gemm_pingpong_kernel: the epilogue's output is padded in granules its 128 x 128 tiles do not cover, and this kernel "
                "writes no padding beyond its tiles (use gemm_kernel, which does)");
  constexpr int stages = cfg::stages;
  constexpr bool staged = detail::is_staged<Epilogue>;
  extern __shared__ unsigned char smem_raw[];
  const detail::ring<cfg> ring(smem_raw);
  auto* order = static_cast<std::uint64_t*>(ring.hand_off);  // order[c]: consumer c may start its next mainloop
  const typename Schedule::template cta<cfg, Cluster, AlongN, 1> sched(prm, sched_args, 1);  // all threads together; one consumer a unit
  const int k_iters = sched.k_iters;
  const int warpgroup = detail::warpgroup_index();
  if (threadIdx.x == 0) {
    detail::prefetch_tensor_map(tma_x);
    detail::prefetch_tensor_map(tma_w);
    detail::prefetch_epilogue(epi);
    cuda::ptx::mbarrier_init(&order[0], 1);
    cuda::ptx::mbarrier_init(&order[1], 1);
  }
  detail::init_ring<cfg, Cluster>(ring, Cluster);  // empty: the consuming warpgroup of each CTA

  if (warpgroup == 0) {
    detail::setmaxnreg_dec<cfg::producer_registers>();
    if (threadIdx.x == 0) detail::produce<cfg, Cluster, AlongN>(ring, tma_x, tma_w, sched);
    if constexpr (decltype(sched)::takes_units) {
      if (threadIdx.x == 32) sched.take_units();  // another warp: the counter's latency stays off the producer's path
    }
  } else {
    detail::setmaxnreg_inc<cfg::consumer_registers>();
    const int consumer = warpgroup - 1;
    const int thread = static_cast<int>(threadIdx.x % 128);
    const bool leader = detail::warpgroup_leader();
    const detail::mainloop<cfg, Cluster, 2, InFlight> mma{detail::descriptor_low(ring.a), detail::descriptor_low(ring.b), leader, thread};
    std::uint32_t turn_phase = 0;
    // Consumer c runs the CTA's units c, c + 2, ... (i); `position`: the ring position of its next stage.
    for (int i = consumer, unit = sched.first + consumer * sched.stride, position = consumer * k_iters;;
         i += 2, unit += 2 * sched.stride, position += 2 * k_iters) {
      if constexpr (decltype(sched)::takes_units) unit = sched.consumer_unit(i);
      if (unit >= sched.units) break;
      if (position > 0) {  // every mainloop but the CTA's first waits for the other's to pass
        detail::wait_parity(&order[consumer], turn_phase);
        turn_phase ^= 1;
      }
      const work_unit u = sched.at(unit);
      detail::ring_cursor cursor{position % stages, static_cast<std::uint32_t>(position / stages) & 1u};
      float acc[2][block_n / 2];  // rows 0..63 and 64..127 of the tile
      decltype(mma)::clear(acc);
      mma.run(ring, acc, k_iters, cursor);
      if (thread == 0) cuda::ptx::mbarrier_arrive(&order[1 - consumer]);  // all its stages arrived: the other may go
      mma.drain(ring, acc, k_iters, cursor);
      const index_t row0 = static_cast<index_t>(u.m_blk) * block_m, col0 = static_cast<index_t>(u.n_blk) * block_n;
      if constexpr (staged) {  // a dense launch: the unit's rows are D's
        unsigned char* buffer = detail::staging_buffer(ring, consumer);
        detail::staged_fragment_store<block_n>(epi.map, acc[0], row0, col0, buffer, thread, consumer);
        detail::staged_fragment_store<block_n>(epi.map, acc[1], row0 + 64, col0, buffer, thread, consumer);
      } else {
        const auto& tile_epi = detail::epilogue_for(epi, u);  // rows of the unit's group
        tile_epi.warpgroup(acc[0], row0, col0);
        tile_epi.warpgroup(acc[1], row0 + 64, col0);
      }
    }
    if constexpr (staged) {
      if (thread == 0) fp4fuse::wait_staged_stores();  // the staging must outlive TMA's last read
    }
  }
  if constexpr (Cluster > 1) detail::cluster_sync<Cluster>();
#else
  (void)tma_x, (void)tma_w, (void)prm, (void)epi, (void)sched_args;
  __trap();  // built for a target without wgmma: never write nothing silently
#endif
}
}  // namespace detail

/// The cooperative kernel (config's consumer warpgroups on one tile: two, or three for 192-row
/// tiles); `Schedule` (schedule.cuh) picks its work units, `sched_args` its host-side arguments
/// (last, so that the other parameters keep their offsets whatever it holds).
/// Cluster = 2: the two CTAs of a cluster take vertically adjacent tiles (same W columns); each
/// loads half of the W tile and multicasts it to both, halving W's L2-to-SM traffic (AlongN:
/// horizontally adjacent tiles sharing the X tile; 192-row tiles only along N). A ring slot is
/// refilled only when the consumers of both CTAs have released it. No K split with clusters.
/// A schedule that takes its units at run time (grouped_schedule's unit_order::taken; not with
/// the single-consumer 64 x 32 and 64 x 48 tiles) takes them in a thread of the producer
/// warpgroup's second warp and hands each to the producer and every consumer warpgroup through a
/// queue in shared memory.
/// A staged BF16 store (staged_store.cuh) runs as gemm_staged_kernel instead: the same body with
/// the epilogue as a __grid_constant__ parameter.
/// \code
/// auto* kernel = &fp4fuse::gemm::sm90::gemm_kernel<64, 128, 1, fp4fuse::gemm::sm90::dense_schedule, fp4fuse::gemm::store_bf16<>>;
/// (void)cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(fp4fuse::gemm::sm90::config<128, 64>::smem_bytes));
/// // then cudaLaunchKernelEx with config<128, 64>::threads threads a CTA, as launch_tiles does
/// \endcode
template <int BlockM, int BlockN, int Cluster, class Schedule, class Epilogue, bool AlongN = false>
__global__ void __launch_bounds__((config<BlockN, BlockM>::threads), 1)  // parenthesized: Doxygen drops the comment at an unbracketed comma
    gemm_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm, Epilogue epi,
                typename Schedule::arguments sched_args) {
  static_assert(!detail::is_staged<Epilogue>, "gemm_kernel: a staged store needs its tensor map in parameter space: use gemm_staged_kernel");
  detail::cooperative_body<BlockM, BlockN, Cluster, Schedule, Epilogue, AlongN>(tma_x, tma_w, prm, epi, sched_args);
}

/// The cooperative kernel with a staged store (staged_store.cuh; 128-row tiles): `epi` (a
/// staged_bf16_store) is a __grid_constant__ parameter, so that TMA reads its tensor map in
/// parameter space. Each consumer warpgroup stores its 64-row fragment box by box after the
/// mainloop (and the K split's fixup); the producer meanwhile fills the ring for the next tile.
/// \code
/// [[maybe_unused]] auto* kernel = &fp4fuse::gemm::sm90::gemm_staged_kernel<128, 256, 1, fp4fuse::gemm::sm90::dense_schedule,
///                                                                          fp4fuse::gemm::sm90::detail::staged_bf16_store>;
/// // launch_tiles' choice for a plain store_bf16<> whose D TMA can address
/// \endcode
template <int BlockM, int BlockN, int Cluster, class Schedule, class Epilogue, bool AlongN = false>
__global__ void __launch_bounds__((config<BlockN, BlockM>::threads), 1)  // parenthesized: Doxygen drops the comment at an unbracketed comma
    gemm_staged_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm,
                       const __grid_constant__ Epilogue epi, typename Schedule::arguments sched_args) {
  static_assert(detail::is_staged<Epilogue>, "gemm_staged_kernel: a staged epilogue (staged_bf16_store)");
  detail::cooperative_body<BlockM, BlockN, Cluster, Schedule, Epilogue, AlongN>(tma_x, tma_w, prm, epi, sched_args);
}

/// The ping-pong schedule for large M: each consumer warpgroup owns a whole 128 x 128 tile (two
/// wgmma m64n128k16 per 16 columns of K, eight per K step; 128 accumulators per thread) and the
/// two take alternate tiles, so one runs its epilogue while the other keeps the tensor cores busy
/// with its mainloop. The
/// producer fills the 6-stage ring with the CTA's tiles in order; consumer c starts at ring
/// position c * k_iters and skips the other's stages. A consumer starts a mainloop only after the
/// other has passed the end of its previous one (an order barrier): without it a consumer that
/// skips a whole ring pass would wait on a barrier two phases ahead, which the parity wait cannot
/// tell from the phase before. Clusters of 2 along M multicast W as in gemm_kernel. No K split.
/// A schedule that takes its units at run time (grouped_schedule's unit_order::taken) takes them
/// in a thread of the producer warpgroup's second warp and hands the CTA's i-th unit to the
/// producer and to consumer i % 2 through a queue in shared memory.
/// A consumer keeps the MMAs of `InFlight` K steps (1 or 2) queued on the tensor cores, so that
/// the other consumer's epilogue, competing for the same issue slots, can delay its next issue by
/// up to that many K steps without the tensor cores running dry; the stages they read are held.
/// `Schedule`, `sched_args`: as for gemm_kernel; every unit spans all of K. The kernel writes no
/// padding beyond its tiles: its 128 x 128 tiles must cover the epilogue's padding (checked).
/// A staged BF16 store (staged_store.cuh) runs as gemm_pingpong_staged_kernel instead: the same
/// body with the epilogue as a __grid_constant__ parameter (TMA reads its tensor map in parameter
/// space; declaring every epilogue so changed the code of other kernels, bench/results/engine7.md).
/// \code
/// [[maybe_unused]] auto* kernel = &fp4fuse::gemm::sm90::gemm_pingpong_kernel<2, 1, fp4fuse::gemm::sm90::dense_schedule,
///                                                                            fp4fuse::gemm::swiglu_bf16<fp4fuse::activation::swiglu>>;
/// // 384 threads a CTA (sm90::threads), clusters of 2 along M, one K step of MMAs in flight
/// \endcode
template <int Cluster, int InFlight, class Schedule, class Epilogue, bool AlongN = false>
__global__ void __launch_bounds__(threads, 1)
    gemm_pingpong_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm,
                         Epilogue epi, typename Schedule::arguments sched_args) {
  static_assert(!detail::is_staged<Epilogue>,
                "gemm_pingpong_kernel: a staged store needs its tensor map in parameter space: use gemm_pingpong_staged_kernel");
  detail::pingpong_body<Cluster, InFlight, Schedule, Epilogue, AlongN>(tma_x, tma_w, prm, epi, sched_args);
}

/// The ping-pong kernel with a staged store (staged_store.cuh): `epi` (a staged_bf16_store) is a
/// __grid_constant__ parameter, so that TMA reads its tensor map in parameter space.
/// \code
/// [[maybe_unused]] auto* kernel = &fp4fuse::gemm::sm90::gemm_pingpong_staged_kernel<2, 1, fp4fuse::gemm::sm90::dense_schedule,
///                                                                                   fp4fuse::gemm::sm90::detail::staged_bf16_store>;
/// \endcode
template <int Cluster, int InFlight, class Schedule, class Epilogue, bool AlongN = false>
__global__ void __launch_bounds__(threads, 1)
    gemm_pingpong_staged_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm,
                                const __grid_constant__ Epilogue epi, typename Schedule::arguments sched_args) {
  static_assert(detail::is_staged<Epilogue>, "gemm_pingpong_staged_kernel: a staged epilogue (staged_bf16_store)");
  detail::pingpong_body<Cluster, InFlight, Schedule, Epilogue, AlongN>(tma_x, tma_w, prm, epi, sched_args);
}

}  // namespace fp4fuse::gemm::sm90
