#pragma once
// The grouped GEMM's swap-AB kernel (sm_90a): D^T = W X^T per expert, W's gate/up rows as wgmma's
// M (64 per consumer warpgroup, 128 per tile) and the expert's tokens as its N, any multiple of 16
// up to MaxTokens chosen per work unit from the expert's rows. The MMA work then follows an
// expert's rows instead of whole 64-row fragments: an expert of 144 rows costs 144 columns of MMA,
// not 192 rows, and each consumer reads its 8 KiB of W and the expert's X tile per K step
// (bench/results/engine11.md's model: about 0.77x the shared-memory traffic of the cooperative
// 192 x 128 tile there). Composed of the engine's parts: the grouped schedule
// (grouped_schedule.cuh, with tiles of MaxTokens rows: an expert's units are its token chunks times
// its W blocks), the ring (ring.cuh, W tiles as the A operand, X tiles as B), the
// consumer mainloop (mainloop.cuh, one instantiation per token width), and the epilogue binding's
// swap-AB form (`warpgroup_swap_ab`: fp4fuse::wgmma_swap_ab_epilogue through shared memory).
// The fused NVFP4 epilogue only; compiled for any other target the kernel traps.
#include <cuda.h>  // CUtensorMap

#include <cuda/cmath>
#include <cuda/ptx>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/cmath.cuh"
#include "fp4fuse/epilogue/wgmma_swap_ab.cuh"
#include "fp4fuse/gemm/sm90/epilogue.cuh"
#include "fp4fuse/gemm/sm90/mainloop.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/sm90/ring.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"

namespace fp4fuse::gemm::sm90 {

/// The swap-AB tile: 128 W rows (gate/up columns of the output) by up to MaxTokens tokens;
/// `Tokens`: the wgmma width of one instantiation of the mainloop (the ring's layout does not
/// depend on it). The ring's "a" tiles are W's (wgmma's A), its "b" tiles X's. X arrives in boxes
/// of `x_box_rows` rows, as many as the unit's tokens need. The kernel gives each consumer
/// warpgroup 64 W rows of the tile. Two ping-pong forms were measured and removed: whole 128-row
/// tiles a consumer spilled (bench/results/engine12.md); 64-row tiles a consumer hid DeepSeek-V3's
/// epilogue, but their mainloop alone ran 1.30-1.32x the cooperative one's on the H200, likely in
/// part because a 64-row tile brings the X tile for half the MMAs: 15-19% more L2 bytes (ncu on an
/// H100; the H200 was not profiled; bench/results/engine13.md; its code: `0b68398`).
template <int MaxTokens, int Tokens = MaxTokens>
struct swap_ab_config {
  static_assert(MaxTokens % 32 == 0 && MaxTokens >= 64 && MaxTokens <= 256, "swap_ab_config: MaxTokens a multiple of 32 in [64, 256]");
  static_assert(Tokens % 16 == 0 && Tokens >= 16 && Tokens <= MaxTokens, "swap_ab_config: Tokens a multiple of 16 up to MaxTokens");
  static constexpr int rows = MaxTokens;    ///< the schedule's tile rows: tokens per unit at most
  static constexpr int block_n = 128;       ///< the schedule's tile columns: W rows per unit
  static constexpr int consumers = 2;       ///< consumer warpgroups, 64 W rows each
  static constexpr int threads = 384;       ///< the producer warpgroup and the consumers
  static constexpr int producer_registers = 40;   ///< the producer's registers after setmaxnreg
  static constexpr int consumer_registers = 232;  ///< the consumers' registers after setmaxnreg
  static constexpr int consumer_n = Tokens;        ///< wgmma's N (mainloop.cuh)
  static constexpr int registers = Tokens / 2;     ///< accumulators per consumer thread
  static constexpr int x_box_rows = 32;            ///< X's TMA box
  static constexpr int chunk_tokens = 64;          ///< tokens per pass of the epilogue's scratch
  static constexpr int a_stage_bytes = block_n * block_k * 2;  ///< one W tile
  static constexpr int b_stage_bytes = MaxTokens * block_k * 2;  ///< one X tile (MaxTokens rows)
  static constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;  ///< one ring stage (what its full barrier expects at most)
  /// The epilogue's scratch, both consumers'.
  static constexpr std::size_t scratch_bytes = consumers * std::size_t(wgmma_swap_ab_scratch_floats<chunk_tokens>) * sizeof(float);
  /// Ring stages: what a CTA's shared memory holds beside the scratch, the alignment slack and
  /// barriers, and the grouped schedule's scan (about 13 KiB of static shared memory: 14 KiB kept).
  static constexpr int stages = static_cast<int>((max_smem_per_cta - 14 * 1024 - scratch_bytes - 1024 - 256) / stage_bytes);
  /// The ring, its barriers and hand-off bytes (ring.cuh), then the scratch.
  static constexpr std::size_t smem_bytes = std::size_t(stages) * stage_bytes + 1024 + 2 * stages * 8 + 16 + scratch_bytes;
  static constexpr bool skips_empty_fragments = false;  ///< the grouped schedule's question: no (the tokens set the width instead)
  static_assert(stages >= 3, "swap_ab_config: the ring needs three stages or more");
  static_assert(a_stage_bytes % 1024 == 0 && b_stage_bytes % 1024 == 0, "swap_ab_config: ring tiles on the swizzle's 1024-byte period");
  static_assert(smem_bytes <= max_smem_per_cta, "swap_ab_config: the ring and the scratch must fit in a CTA's shared memory");
};

namespace detail {

/// The tokens of unit `u`'s chunk of its group: the group's rows cut into ceil(rows / MaxTokens)
/// chunks of equal size rounded up to 16 (the last holds the rest), so that each chunk's wgmma
/// width is as small as the rows allow.
struct token_chunk {
  int token0;  ///< the chunk's first row within the group
  int tokens;  ///< its rows (>= 1)
  int width;   ///< wgmma's N: tokens rounded up to 16
  bool last;   ///< the group's last chunk
};
template <int MaxTokens>
FP4FUSE_HOST_DEVICE token_chunk token_chunk_of(int group_rows, int chunk) {
  const int chunks = cuda::ceil_div(group_rows, MaxTokens);
  const int size = fp4fuse::detail::round_up(cuda::ceil_div(group_rows, chunks), 16);
  token_chunk c;
  c.token0 = chunk * size;
  c.tokens = group_rows - c.token0 < size ? group_rows - c.token0 : size;
  c.width = fp4fuse::detail::round_up(c.tokens, 16);
  c.last = chunk == chunks - 1;
  return c;
}

/// Calls f(std::integral_constant<int, N>{}) for the N = `width` among 16, 32, ..., MaxTokens.
template <int MaxTokens, class F, int... I>
FP4FUSE_DEVICE void with_width(int width, F&& f, std::integer_sequence<int, I...>) {
  (void)((width == 16 * (I + 1) ? (f(std::integral_constant<int, 16 * (I + 1)>{}), true) : false) || ...);
}

/// The producer (one thread): for each of the CTA's units, each K step's W tile (128 rows, ring
/// "a") and the X boxes of the unit's tokens (ring "b", boxes of x_box_rows rows from the chunk's
/// first token; rows beyond the chunk's hold another expert's tokens or TMA's zeros, and only the
/// output's padding depends on them).
template <class Cfg, int Cluster, class Schedule>
FP4FUSE_DEVICE void produce_swap_ab(const ring<Cfg>& r, const CUtensorMap& tma_x, const CUtensorMap& tma_w, const Schedule& sched) {
  constexpr int box_bytes = Cfg::x_box_rows * block_k * 2;
  constexpr auto all_ctas = static_cast<std::uint16_t>((1u << Cluster) - 1);  // the multicast mask
  int stage = 0;
  std::uint32_t phase = 0;
  for (int unit = sched.first; unit < sched.units; unit += sched.stride) {
    const work_unit u = sched.at(unit);
    const token_chunk c = token_chunk_of<Cfg::rows>(u.group_rows, u.m_blk);
    const int boxes = cuda::ceil_div(c.width, Cfg::x_box_rows);
    const auto tx = static_cast<std::uint32_t>(boxes * box_bytes + Cfg::a_stage_bytes);
    const int x_row = u.group_row0 + c.token0;
    for (int k = u.k_begin; k < u.k_end; ++k) {
      wait_parity(&r.empty[stage], phase ^ 1);
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, &r.full[stage], tx);
      const std::int32_t wc[2] = {k * block_k, u.b_row};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.a + stage * Cfg::a_stage_bytes, &tma_w, wc,
                                      &r.full[stage]);
      for (int b = sched.rank; b < boxes; b += Cluster) {  // a cluster's CTAs take alternate boxes, each multicast to both
        const std::int32_t xc[2] = {k * block_k, x_row + b * Cfg::x_box_rows};
        if constexpr (Cluster == 1) {
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.b + stage * Cfg::b_stage_bytes + b * box_bytes,
                                          &tma_x, xc, &r.full[stage]);
        } else {
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.b + stage * Cfg::b_stage_bytes + b * box_bytes,
                                          &tma_x, xc, &r.full[stage], all_ctas);
        }
      }
      if (++stage == Cfg::stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

/// True for epilogues with the swap-AB form (`warpgroup_swap_ab`, epilogues.cuh).
template <class Epilogue, class = void>
inline constexpr bool has_swap_ab = false;
template <class Epilogue>
inline constexpr bool has_swap_ab<Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().template warpgroup_swap_ab<64>(
                                                std::declval<const float (&)[8]>(), index_t{}, index_t{}, nullptr, 1))>> = true;

}  // namespace detail

/// The swap-AB grouped kernel: a persistent CTA of a producer warpgroup and two consumer
/// warpgroups; per unit (an expert's token chunk and 128 of its W rows) each consumer runs the
/// mainloop with its 64 W rows as A and the chunk's X rows as B at the chunk's width, then the
/// swap-AB epilogue through its share of the scratch on its own named barrier, and in the expert's
/// last chunk the scale padding of the rows beyond it to the end of their granule of rows (the
/// epilogue's padding granule, tile_grid.cuh; `warpgroup_beyond_rows`). A unit starts anywhere in
/// the ring (the consumers' ring cursor runs on across units). The column padding needs no unit:
/// `Cluster` units of 128 W rows cover whole granules of columns. `Schedule`:
/// grouped_schedule<BandRows> (its tiles of MaxTokens rows are the token chunks). No plan chooses
/// it: its epilogue, which no mainloop hides, makes it slower than the planned kernels at T = 4096,
/// even with the fast activations (bench/results/engine14.md).
/// \code
/// [[maybe_unused]] auto* kernel = &fp4fuse::gemm::sm90::gemm_swap_ab_kernel<192, 2, fp4fuse::gemm::sm90::grouped_schedule<128>,
///     fp4fuse::gemm::moe::epilogue::grouped<fp4fuse::gemm::moe::epilogue::swiglu_nvfp4<fp4fuse::scale_layout::expert_start::offset_bound,
///                                                                                      fp4fuse::activation::swiglu>, false>>;
/// \endcode
template <int MaxTokens, int Cluster, class Schedule, class Epilogue>
__global__ void __launch_bounds__(swap_ab_config<MaxTokens>::threads, 1)
    gemm_swap_ab_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm, Epilogue epi,
                        typename Schedule::arguments sched_args) {
#if FP4FUSE_ARCH_IS_SM90A
  using cfg = swap_ab_config<MaxTokens>;
  static_assert(detail::has_swap_ab<detail::unit_epilogue<Epilogue>>, "gemm_swap_ab_kernel: an epilogue with the swap-AB form (swiglu_nvfp4)");
  extern __shared__ unsigned char smem_raw[];
  const detail::ring<cfg> ring(smem_raw);
  float* scratch = reinterpret_cast<float*>(static_cast<unsigned char*>(ring.hand_off) + 16);
  static_assert(Cluster == 1 || Cluster == 2, "gemm_swap_ab_kernel: clusters of 1 or 2 CTAs (along W: pairs of W blocks share the X tile)");
  const typename Schedule::template cta<cfg, Cluster, Cluster == 2> sched(prm, sched_args, 1);  // all threads together
  static_assert(!decltype(sched)::takes_units, "gemm_swap_ab_kernel: its units are first, first + stride, ... (unit_order::fixed)");
  const int warpgroup = detail::warpgroup_index();
  if (threadIdx.x == 0) {
    detail::prefetch_tensor_map(tma_x);
    detail::prefetch_tensor_map(tma_w);
    detail::prefetch_epilogue(epi);
  }
  detail::init_ring<cfg, Cluster>(ring, cfg::consumers * Cluster);  // empty: each consumer warpgroup of the cluster
  if (warpgroup == 0) {
    detail::setmaxnreg_dec<cfg::producer_registers>();
    if (threadIdx.x == 0) detail::produce_swap_ab<cfg, Cluster>(ring, tma_x, tma_w, sched);
  } else {
    detail::setmaxnreg_inc<cfg::consumer_registers>();
    using granule = padding_granule<detail::unit_epilogue<Epilogue>>;
    constexpr int beyond_parts = static_cast<int>(cuda::ceil_div(granule::rows, index_t{64}));  // 64-row parts after the last chunk
    static_assert((Cluster * cfg::block_n) % granule::cols == 0,
                  "gemm_swap_ab_kernel: a cluster's units (Cluster x 128 columns) must be whole granules of the epilogue's "
                  "padding, or the columns beyond the last unit would be nobody's to pad");
    const int consumer = warpgroup - 1;
    const int w_row0 = 64 * consumer;  // the consumer's W rows within the unit's 128
    const int thread = static_cast<int>(threadIdx.x % 128);
    const bool leader = detail::warpgroup_leader();
    float* my_scratch = scratch + consumer * wgmma_swap_ab_scratch_floats<cfg::chunk_tokens>;
    detail::ring_cursor cursor;
    for (int unit = sched.first; unit < sched.units; unit += sched.stride) {
      const work_unit u = sched.at(unit);
      const auto& tile_epi = detail::epilogue_for(epi, u);
      const detail::token_chunk c = detail::token_chunk_of<cfg::rows>(u.group_rows, u.m_blk);
      const index_t col0 = static_cast<index_t>(u.n_blk) * cfg::block_n + w_row0;
      detail::with_width<cfg::rows>(c.width, [&](auto width) {
        constexpr int N = decltype(width)::value;
        using mma_cfg = swap_ab_config<MaxTokens, N>;
        const detail::ring<mma_cfg> r(smem_raw);  // the same layout: the ring does not depend on the width
        const detail::mainloop<mma_cfg, Cluster, 1, 1> mma{detail::descriptor_low(r.a + w_row0 * block_k * 2), detail::descriptor_low(r.b),
                                                           leader, thread};
        float acc[1][N / 2];
        decltype(mma)::clear(acc);
        cursor.previous = -1;
        mma.run(r, acc, u.k_end - u.k_begin, cursor);
        mma.drain(r, acc, u.k_end - u.k_begin, cursor);
        tile_epi.template warpgroup_swap_ab<cfg::chunk_tokens>(acc[0], c.token0, col0, my_scratch, 1 + consumer);
        if (c.last) {
#pragma unroll 1  // one copy of the padding's code per width
          for (int part = 0; part < beyond_parts; ++part) tile_epi.template warpgroup_beyond_rows<64>(c.token0 + N + 64 * part, col0);
        }
      }, std::make_integer_sequence<int, cfg::rows / 16>{});
    }
  }
  // No CTA may leave while its peer can still multicast into it or arrive on its barriers.
  if constexpr (Cluster > 1) detail::cluster_sync<Cluster>();
#else
  (void)tma_x, (void)tma_w, (void)prm, (void)epi, (void)sched_args;
  __trap();  // built for a target without wgmma: never write nothing silently
#endif
}

}  // namespace fp4fuse::gemm::sm90
