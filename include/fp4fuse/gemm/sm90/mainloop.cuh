#pragma once
// The sm_90a GEMM's consumer mainloop collective: the wgmma loop over a work unit's K steps on the
// ring that the producer (ring.cuh) fills, written once for every kernel. A consumer warpgroup
// holds `Fragments` accumulator fragments of 64 rows each (the cooperative kernel 1: its 64 rows,
// or its half of the columns of a 64-row tile; the ping-pong kernel 2: a whole 128-row tile; the
// swap-AB kernel 1: 64 W rows, swap_ab.cuh) and keeps the MMAs of `InFlight` K steps queued on the
// tensor cores; the stage they read is released to the producer(s) once they have finished.
#include <cstdint>

#include "fp4fuse/config.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/sm90/ring.cuh"

namespace fp4fuse::gemm::sm90 {
namespace detail {

/// Where a consumer is in the ring: the next stage it reads and that stage's phase; `previous`:
/// the stage its last K step read (-1 before its first), the slot the cooperative kernel releases
/// next.
struct ring_cursor {
  int stage = 0;
  std::uint32_t phase = 0;
  int previous = -1;
};

/// The mainloop of one consumer warpgroup. `a_desc0`, `b_desc0`: the descriptors (descriptor_low)
/// of the warpgroup's first X row and W row in ring stage 0; fragment f reads X rows 64f onwards.
template <class Cfg, int Cluster, int Fragments, int InFlight>
struct mainloop {
  static_assert(Fragments == 1 || Fragments == 2, "mainloop: 1 fragment (cooperative) or 2 (ping-pong, 128 rows)");
  static_assert(InFlight == 1 || InFlight == 2, "mainloop: 1 or 2 K steps of MMAs in flight");
  static_assert(Fragments == 1 || Cfg::rows == 128, "mainloop: two fragments cover a 128-row tile");
  static_assert(InFlight <= Cfg::stages - 1, "mainloop: the ring needs a stage beyond the ones held in flight");
  static constexpr int stages = Cfg::stages;
  static constexpr int registers = Cfg::registers;
  /// With one fragment and one K step in flight (the cooperative kernel, the swap-AB kernel) the
  /// stage to release is tracked in a register (`ring_cursor::previous`, -1 at a unit's start, so a
  /// unit may start anywhere in the ring); the ping-pong kernel computes it from the stage. (Each
  /// form is the instruction sequence its kernel was tuned with: bench/HISTORY.md.)
  static constexpr bool release_previous = Fragments == 1 && InFlight == 1;

  std::uint32_t a_desc0, b_desc0;
  bool leader;  ///< warpgroup_leader(): the thread that releases slots inside the loop
  int thread;   ///< the thread's index in the warpgroup: thread 0 releases the last slots

  /// Zeroes the accumulators.
  FP4FUSE_DEVICE static void clear(float (&acc)[Fragments][registers]) {
#pragma unroll
    for (int i = 0; i < registers; ++i) {
#pragma unroll
      for (int f = 0; f < Fragments; ++f) acc[f][i] = 0.0f;
    }
  }

  /// Keeps the compiler from moving accumulator accesses across the asynchronous MMAs.
  FP4FUSE_DEVICE static void fence(float (&acc)[Fragments][registers]) {
#pragma unroll
    for (int f = 0; f < Fragments; ++f) fence_accumulators(acc[f]);
  }

  /// `k_steps` K steps from the cursor's stage: wait for the stage, issue its MMAs (64 columns of
  /// K, 4 wgmma per fragment), keep InFlight K steps queued, release the stage read InFlight steps
  /// ago. Leaves the last InFlight steps' MMAs in flight and their stages held (`drain`).
  FP4FUSE_DEVICE void run(const ring<Cfg>& r, float (&acc)[Fragments][registers], int k_steps, ring_cursor& c) const {
    for (int k = 0; k < k_steps; ++k) {
      wait_parity(&r.full[c.stage], c.phase);
      const std::uint32_t desc_a = a_desc0 + c.stage * (Cfg::a_stage_bytes >> 4);
      const std::uint32_t desc_b = b_desc0 + c.stage * (Cfg::b_stage_bytes >> 4);
      fence(acc);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < block_k / 16; ++kk) {
#pragma unroll
        for (int f = 0; f < Fragments; ++f) wgmma_bf16<Cfg::consumer_n>(acc[f], desc_a + f * (64 * 128 >> 4) + 2 * kk, desc_b + 2 * kk);
      }
      wgmma_commit();
      wgmma_wait<InFlight>();
      fence(acc);
      // The MMAs of K step k - InFlight have finished reading their stage.
      if constexpr (release_previous) {
        if (c.previous >= 0 && leader) release_slot<Cluster>(&r.empty[c.previous]);
        c.previous = c.stage;
      } else {
        if (k >= InFlight && leader) release_slot<Cluster>(&r.empty[(c.stage + stages - InFlight) % stages]);
      }
      if (++c.stage == stages) {
        c.stage = 0;
        c.phase ^= 1;
      }
    }
  }

  /// `k_steps` K steps without MMAs, for a consumer whose rows hold nothing of the unit's group
  /// (config::skips_empty_fragments): it waits for each stage as `run` does and releases it at
  /// once, so that the ring's slots are refilled when the other consumers are done with them.
  /// Leaves nothing held (`drain` releases nothing after it).
  FP4FUSE_DEVICE void pass(const ring<Cfg>& r, int k_steps, ring_cursor& c) const {
    for (int k = 0; k < k_steps; ++k) {
      wait_parity(&r.full[c.stage], c.phase);
      if (leader) release_slot<Cluster>(&r.empty[c.stage]);
      if (++c.stage == stages) {
        c.stage = 0;
        c.phase ^= 1;
      }
    }
    c.previous = -1;
  }

  /// Waits for the MMAs still in flight and releases the stages they held (`k_steps`: the steps
  /// `run` issued for this unit).
  FP4FUSE_DEVICE void drain(const ring<Cfg>& r, float (&acc)[Fragments][registers], int k_steps, const ring_cursor& c) const {
    wgmma_wait<0>();
    fence(acc);
    if constexpr (release_previous) {
      if (c.previous >= 0 && thread == 0) release_slot<Cluster>(&r.empty[c.previous]);
    } else {
      if (thread == 0) {
        for (int d = 1; d <= InFlight && d <= k_steps; ++d) release_slot<Cluster>(&r.empty[(c.stage + stages - d) % stages]);
      }
    }
  }
};

}  // namespace detail
}  // namespace fp4fuse::gemm::sm90
