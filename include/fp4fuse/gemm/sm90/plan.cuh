#pragma once
// What a launch of the sm_90a GEMM is: the tile shapes and their ring depth (config), the kernel's
// arguments (params), the kernel instances that exist (one list per launcher: the dispatch
// table's rows, kernel_list), and the host's choice of tile shape, K split and schedule for a
// problem (plan, cluster_for, validate_plan; plan_grouped, valid).
#include <cuda/cmath>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse::gemm::sm90 {


constexpr int block_m = 128, block_k = 64;
constexpr int threads = 384;  // producer warpgroup + 2 consumer warpgroups (192-row tiles: 3, config::threads)
constexpr int ring_bytes = 192 * 1024;
/// sm_90's shared memory per CTA (static and dynamic): 227 KiB.
constexpr std::size_t max_smem_per_cta = 227 * 1024;

/// 64 x 32 and 64 x 48 tiles have one consumer warpgroup; the others two.
/// \code
/// static_assert(fp4fuse::gemm::sm90::single_consumer_tile(48) && !fp4fuse::gemm::sm90::single_consumer_tile(64));
/// \endcode
constexpr bool single_consumer_tile(int cols) { return cols == 32 || cols == 48; }
/// Columns of one consumer's wgmma for rows x cols tiles: two consumers of a 64-row tile split N.
/// \code
/// static_assert(fp4fuse::gemm::sm90::consumer_columns(64, 256) == 128 && fp4fuse::gemm::sm90::consumer_columns(128, 256) == 256);
/// \endcode
constexpr int consumer_columns(int rows, int cols) { return rows == 64 && !single_consumer_tile(cols) ? cols / 2 : cols; }
/// True when each consumer's part of rows x cols tiles holds a whole number of an epilogue's
/// `column_granule` (gemm/tile_grid.cuh): the tiles that epilogue can take.
/// \code
/// static_assert(fp4fuse::gemm::sm90::holds_column_granule(64, 48, 8));    // the BF16 store takes 64 x 48 tiles
/// static_assert(!fp4fuse::gemm::sm90::holds_column_granule(64, 48, 32));  // NVFP4 (32 gate/up columns a block) does not
/// \endcode
constexpr bool holds_column_granule(int rows, int cols, int column_granule) {
  return column_granule > 0 && consumer_columns(rows, cols) % column_granule == 0;
}

/// Tile shape and ring depth for BlockM x BlockN tiles: 128 x 256, 128 x 192 or 128 x 128 (each consumer
/// warpgroup computes 64 rows of the tile), 192 x 128 (three consumer warpgroups of 64 rows: the
/// grouped GEMM's tile for experts of 129-192 rows, which then stream their W once), 64 x 128 or
/// 64 x 64 for small M (both consumers share the 64 rows and each computes half of the columns),
/// or 64 x 32 and 64 x 48 for decode (one consumer computes the tile, the other only writes the
/// output's padding: streaming W, not MMA issue, bounds a decode GEMM, and the 16- or 13-stage ring
/// keeps more of W in flight; 64 x 48 for epilogues whose column granule divides 48, the BF16
/// stores).
template <int BlockN, int BlockM = block_m>
struct config {
  static_assert((BlockM == 128 && (BlockN == 256 || BlockN == 192 || BlockN == 128)) || (BlockM == 192 && BlockN == 128) ||
                    (BlockM == 64 && (BlockN == 256 || BlockN == 128 || BlockN == 64 || BlockN == 48 || BlockN == 32)),
                "tiles of 128 x 256, 128 x 192, 128 x 128, 192 x 128, 64 x 256, 64 x 128, 64 x 64, 64 x 48 or 64 x 32");
  static constexpr int block_n = BlockN;  ///< tile columns
  static constexpr int rows = BlockM;     ///< tile rows
  static constexpr bool single_consumer = single_consumer_tile(BlockN);  ///< 64 x 32, 64 x 48: one consumer warpgroup computes the tile
  /// Consumer warpgroups with MMAs on one tile in the cooperative kernel (192-row tiles: three;
  /// the ping-pong kernel's 128 x 128 tiles use config<128> and one consumer per tile).
  static constexpr int consumers = BlockM == 192 ? 3 : single_consumer ? 1 : 2;
  /// The CTA's threads: the producer warpgroup and two consumer warpgroups (64 x 32 included,
  /// whose second one only writes padding), or three for 192-row tiles.
  static constexpr int threads = 128 * (1 + (consumers > 2 ? consumers : 2));
  /// Registers per thread after setmaxnreg: the producer keeps 40 of the 168 (384 threads) or 128
  /// (512) each thread is launched with, and the consumers take the rest.
  static constexpr int producer_registers = 40;
  /// The consumers' registers per thread after setmaxnreg (the counts the kernels were checked
  /// with: no spills).
  static constexpr int consumer_registers = threads == 384 ? 232 : 152;
  static_assert(128 * producer_registers + (threads - 128) * consumer_registers <= 65536, "config: the warpgroups' registers fit the SM's");
  /// 192-row tiles, whose experts' ragged ends leave 64-row fragments empty: the producer loads X
  /// in 64-row boxes, only those of fragments with rows of the group, and the consumers of the
  /// others issue no MMAs (detail::fragments_with_rows, mainloop::pass).
  static constexpr bool skips_empty_fragments = BlockM == 192;
  static constexpr bool consumers_split_n = BlockM == 64 && !single_consumer;  ///< 64-row tiles: the consumers split the columns
  /// Columns of one consumer's wgmma and its accumulators per thread.
  static constexpr int consumer_n = consumer_columns(BlockM, BlockN);
  static constexpr int registers = consumer_n / 2;             ///< accumulators per consumer thread
  static constexpr int a_stage_bytes = BlockM * block_k * 2;   ///< one X tile of the ring
  static constexpr int b_stage_bytes = block_n * block_k * 2;  ///< one W tile of the ring
  static constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;  ///< one ring stage (what its full barrier expects)
  /// Ring stages (4: 128 x 256, 128 x 192, 64 x 256; 5: 192 x 128, in 200 KiB; 6: 128 x 128; 8: 64 x 128; 12: 64 x 64; 13: 64 x 48;
  /// 16: 64 x 32).
  static constexpr int stages = (BlockM == 192 ? 200 * 1024 : ring_bytes) / stage_bytes;
  // 1024 bytes of slack to align the ring to the 128-byte swizzle's 1024-byte period, barriers,
  // and one flag per consumer for the split-K hand-off.
  static constexpr std::size_t smem_bytes = std::size_t(stages) * stage_bytes + 1024 + 2 * stages * 8 + 16;  ///< dynamic shared memory
  static_assert(smem_bytes <= max_smem_per_cta, "config: the ring, its barriers and hand-offs must fit in a CTA's shared memory");
  // descriptor_low (ptx.cuh) keeps 18 bits of a shared address and steps descriptors with 32-bit
  // adds: every shared address of the CTA must stay below 256 KiB.
  static_assert(max_smem_per_cta < (std::size_t(1) << 18), "config: shared addresses must fit the descriptors' 18 bits");
  static_assert(stages >= 2, "config: the ring needs at least two stages");
  // The 128-byte swizzle repeats every 8 rows (1024 bytes): every X and W tile of the ring starts on
  // that period (64 x 48: W tiles of 6144 bytes).
  static_assert(a_stage_bytes % 1024 == 0 && b_stage_bytes % 1024 == 0, "config: ring tiles must start on the swizzle's 1024-byte period");
};

/// Whether X's TMA box may be shorter than the tile for a kernel with tiles of config Cfg in
/// clusters of Cluster CTAs along M: for a lone 64-row tile (see x_box_rows).
template <class Cfg, int Cluster>
inline constexpr bool x_box_may_be_short = Cfg::rows == 64 && Cluster == 1;

/// The rows of X one ring stage's TMA box brings, on an X of M rows: M where a lone 64-row tile is
/// taller than X (decode, M < 64), else the tile's rows. TMA fills a box's out-of-bounds rows with
/// zeros, but slowly: a box of 64 rows over 1-32 rows of X cost the decode GEMM 1.3-1.5x its time
/// at GPT-OSS's shape and 1.5-1.7x at DeepSeek-V3's (bench/results/engine9.md). So the box stops
/// at M, and the kernel zeroes the ring's rows beyond M once (detail::zero_rows_beyond): the MMAs
/// read the same zeros as before, and the bits do not change.
/// \code
/// static_assert(fp4fuse::gemm::sm90::x_box_rows<fp4fuse::gemm::sm90::config<64, 64>, 1>(16) == 16);  // decode: X's 16 rows
/// static_assert(fp4fuse::gemm::sm90::x_box_rows<fp4fuse::gemm::sm90::config<256>, 1>(16) == 128);    // a 128-row tile's box
/// \endcode
template <class Cfg, int Cluster>
FP4FUSE_HOST_DEVICE constexpr int x_box_rows(int M) {
  if constexpr (x_box_may_be_short<Cfg, Cluster>) {
    return M < 64 ? M : 64;
  } else {
    return Cfg::rows;
  }
}

/// What a launch computes: the shape, the K split, and the split-K workspace.
struct params {
  int M;  ///< rows of X and D (a grouped launch: all routed rows)
  int N;  ///< columns of D (a grouped launch: per group)
  int K;  ///< the reduction
  int splits;          ///< K is cut into `splits` ranges of whole 64-column blocks (1: no split)
  float* partials;     ///< splits * tiles * 2 consumers * fragment floats (splits > 1)
  unsigned* counters;  ///< tiles * 2 arrival counters, zero between launches (splits > 1)
};

/// Which kernel instance runs, as the host names it: the tile, the schedule (ping-pong or
/// cooperative), the ping-pong's MMAs in flight, and the cluster (1 or 2 CTAs; a cluster of 2
/// along M shares W's tile, along N X's tile, each CTA loading half and multicasting it; 192-row
/// tiles: the X tile's 64-row boxes, alternately).
struct kernel_key {
  int block_m;    ///< tile rows
  int block_n;    ///< tile columns
  int cluster;    ///< CTAs per cluster (1 or 2)
  bool along_n;   ///< the cluster is along N (X shared) rather than M (W shared)
  bool pingpong;  ///< the ping-pong kernel (else the cooperative one)
  int in_flight;  ///< the ping-pong kernel's K steps of MMAs in flight (1 or 2)
};

/// Whether a grouped launch's kernel with `block_m`-row tiles takes its units in order at run time
/// from a counter (grouped_schedule's unit_order::taken) rather than in the fixed order: the
/// ping-pong kernel's and the cooperative 192 x 128's. In the fixed order the clusters drift
/// apart and re-read W strips and X rows from DRAM that the clusters beside them had read
/// (bench/results/engine16.md, engine20.md).
/// \code
/// static_assert(fp4fuse::gemm::sm90::grouped_takes_units(192, false) && !fp4fuse::gemm::sm90::grouped_takes_units(64, false));
/// \endcode
constexpr bool grouped_takes_units(int block_m, bool pingpong) { return pingpong || block_m == 192; }

/// A kernel instance as a type: the dispatch table's row for `kernel_key`s equal to its values
/// (in_flight counts for the ping-pong kernel only).
template <int BlockM, int BlockN, int Cluster, bool Pingpong = false, int InFlight = 2, bool AlongN = false>
struct tile_shape {
  static_assert(Cluster == 1 || Cluster == 2, "tile_shape: clusters of 1 or 2 CTAs");
  static_assert(!AlongN || Cluster == 2, "tile_shape: a cluster along N has 2 CTAs");
  static_assert(BlockM != 192 || (AlongN && !Pingpong), "tile_shape: 192-row tiles are cooperative, in clusters of 2 along N");
  static_assert(!Pingpong || (BlockM == 128 && BlockN == 128), "tile_shape: the ping-pong kernel's tiles are 128 x 128");
  static constexpr int m = BlockM;           ///< tile rows
  static constexpr int n = BlockN;           ///< tile columns
  static constexpr int cluster = Cluster;    ///< CTAs per cluster
  static constexpr int in_flight = InFlight;  ///< the ping-pong kernel's K steps in flight
  static constexpr bool pingpong = Pingpong;  ///< the ping-pong kernel
  static constexpr bool along_n = AlongN;     ///< a cluster along N
  /// In a grouped launch, its kernel takes its units at run time (grouped_takes_units).
  static constexpr bool takes_grouped_units = grouped_takes_units(BlockM, Pingpong);
  /// True when `k` names this instance.
  /// \code
  /// static_assert(fp4fuse::gemm::sm90::tile_shape<128, 128, 2, true, 1>::matches({128, 128, 2, false, true, 1}));  // clustered ping-pong
  /// \endcode
  static constexpr bool matches(const kernel_key& k) {
    return k.block_m == m && k.block_n == n && k.cluster == cluster && k.along_n == along_n && k.pingpong == pingpong &&
           (!pingpong || k.in_flight == in_flight);
  }
};

/// The kernel instances a launcher can run: `contains` answers whether a key names one, `dispatch`
/// calls `f(Shape{})` with the matching row (the launcher's one dispatch table: each launcher
/// lists its rows once, and instantiates those only).
template <class... Shapes>
struct kernel_list {
  /// The number of instances.
  static constexpr int size = static_cast<int>(sizeof...(Shapes));
  /// True when `k` names one of the instances.
  /// \code
  /// static_assert(fp4fuse::gemm::sm90::dense_kernels::contains({64, 48, 1, false, false, 2}));
  /// static_assert(!fp4fuse::gemm::sm90::dense_kernels::contains({64, 48, 2, false, false, 2}));  // no clustered 64 x 48
  /// \endcode
  static constexpr bool contains(const kernel_key& k) { return (Shapes::matches(k) || ...); }
  /// `f(Shape{})` for the instance `k` names, or a bad_shape refusal naming `entry_point` and `k`.
  /// \code
  /// const fp4fuse::result r = fp4fuse::gemm::sm90::dense_kernels::dispatch({64, 48, 1, false, false, 2}, "my_launcher", [](auto shape) {
  ///   std::printf("%d x %d tiles\n", decltype(shape)::m, decltype(shape)::n);  // a launcher: launch_tiles<decltype(shape), ...>(...)
  ///   return fp4fuse::result{};
  /// });
  /// \endcode
  template <class F>
  static result dispatch(const kernel_key& k, const char* entry_point, F&& f) {
    result r = result::with(status::bad_shape, "%s: no kernel instance has %d x %d tiles, %s, cluster %d%s", entry_point, k.block_m, k.block_n,
                            k.pingpong ? "ping-pong" : "cooperative", k.cluster, k.along_n ? " along N" : "");
    bool done = false;
    ((done = done || (Shapes::matches(k) ? (r = f(Shapes{}), true) : false)), ...);
    return r;
  }
};

/// The dense GEMM's instances, unclustered and in clusters of 2 along M (64 x 48: unclustered only, the plan's tile for one row block).
using dense_kernels = kernel_list<tile_shape<128, 256, 1>, tile_shape<128, 192, 1>, tile_shape<128, 128, 1>, tile_shape<64, 256, 1>,
                                  tile_shape<64, 128, 1>, tile_shape<64, 64, 1>, tile_shape<64, 48, 1>, tile_shape<64, 32, 1>,
                                  tile_shape<128, 128, 1, true, 1>,
                                  tile_shape<128, 128, 1, true, 2>, tile_shape<128, 256, 2>, tile_shape<128, 192, 2>, tile_shape<128, 128, 2>,
                                  tile_shape<64, 256, 2>, tile_shape<64, 128, 2>, tile_shape<64, 64, 2>, tile_shape<64, 32, 2>,
                                  tile_shape<128, 128, 2, true, 1>, tile_shape<128, 128, 2, true, 2>>;

/// Tile shape, K split and schedule of a launch.
struct launch_plan {
  int block_n;  ///< tile columns
  int splits;   ///< K splits (1: none)
  int units;    ///< work units (tiles x splits, with clusters pairs of tiles); the launcher fills it in
  int cluster = 0;    ///< CTAs per cluster along M (0: choose: 2 when K is not split and M has 2+ tiles)
  int pingpong = -1;  ///< 1: gemm_pingpong_kernel (128 x 128 per warpgroup, no split); 0 or -1: cooperative
  int in_flight = 0;  ///< ping-pong: K steps of MMAs a consumer keeps queued (1 or 2; 0: 2)
  int block_m = 128;  ///< tile rows: 128, or 64 (64 x 256, 64 x 128, 64 x 64, 64 x 48 and 64 x 32 tiles, cooperative only)
};

/// The dispatch table's key of dense plan `p` with `cluster` CTAs per cluster (along M).
/// \code
/// constexpr fp4fuse::gemm::sm90::launch_plan p{128, 1, 0, 0, /*pingpong=*/1, /*in_flight=*/1};
/// static_assert(fp4fuse::gemm::sm90::dense_kernels::contains(fp4fuse::gemm::sm90::dense_key(p, 2)));  // the ping-pong in clusters of 2
/// \endcode
constexpr kernel_key dense_key(const launch_plan& p, int cluster) {
  return {p.block_m, p.block_n, cluster, false, p.pingpong == 1, p.in_flight == 1 ? 1 : 2};
}

/// The most work units a dense launch takes: the kernels count units in int and step their
/// indices by the grid, so launch refuses more (a forced plan's can pass it).
inline constexpr std::int64_t max_dense_units = std::int64_t{1} << 30;

/// The plan for a problem: the tile shape and K split with the least estimated time on the
/// busiest SM, in units of one 128 x 256 x 64 MMA step: waves x (K blocks per unit + a fixed cost
/// per unit for pipeline fill and epilogue, about 6 steps) x the tile's relative cost per step
/// (128 x 192: three quarters of the work, 3% dearer; 128 x 128: half the work, 10% dearer; 64-row tiles: a quarter or an eighth of the work, dearer
/// per MMA since both consumers read the same X tile), and with K split the workspace round trip
/// (about 2 steps plus 1.5 per split, the last split reading every split's fragment back). Then,
/// with two or more 128 x 128 tiles per SM, the ping-pong schedule, which hides each tile's
/// epilogue behind the other consumer's mainloop (bench/HISTORY.md, third session: for every epilogue once the
/// mainloop's issue was cut to 70 instructions per K step), with one K step of MMAs in flight (0.98-0.99x
/// the time of two at T >= 4096 for the staged BF16 store, within 1% for the fused epilogue,
/// bench/results/engine8.md call G; two in the grouped GEMM, not measured there).
/// Except, for a plain BF16 store staged through TMA (`staged_store`: the launcher passes whether
/// it stages, launch.cuh), with a long reduction (K >= 4096): a cooperative 128 x 256 plan stays
/// (not 128 x 192 or 128 x 128: measured slower than the ping-pong, or untried). Staged,
/// its store costs a tile little, and over a long K the cooperative mainloop's pace beats the
/// ping-pong's hidden epilogue: the ping-pong's mainloop runs 4-5% slower (its 128 x 128 tiles move
/// 1.5x the L2-to-SM bytes per MAC, and the SM clock drops at the power limit). Measured on the
/// H200 (bench/results/engine8.md), cooperative 128 x 256 / ping-pong time: K = 7168 (DeepSeek-V3)
/// 0.96x at T = 4096, 0.97-0.99x at 16384; K = 2880 (GPT-OSS) 1.07x at T = 4096 (0.97-1.09x at
/// 16384), where a tile's unhidden epilogue and fill weigh 2.5x more against its 45 K steps.
/// Last, for decode (one row block), 64 x 32 tiles unsplit where the 64-row choice split K and 64 x 32
/// tiles fill 3/4 or more of the SMs in one wave; and 64 x 48 tiles where the choice is 64 x 64
/// unsplit, 64 x 48 tiles fill 3/4 or more of the SMs in one wave, and the epilogue's
/// `column_granule` (gate/up columns a consumer's part must hold whole: 8 for the BF16 store, 16 for
/// the SwiGLU BF16 store, 32 for NVFP4 blocks; epilogues.cuh) divides 48: each SM then streams 3/4
/// of the W it would (GPT-OSS's 2I = 5760: 120 tiles against 90).
/// \code
/// const fp4fuse::gemm::sm90::launch_plan p = fp4fuse::gemm::sm90::plan(4096, 5760, 2880, 132);  // GPT-OSS's L1 at T = 4096, 132 SMs
/// // p: 128 x 128 ping-pong tiles, one K step in flight, K not split
/// \endcode
inline launch_plan plan(int M, int N, int K, int sms, bool staged_store = false, int column_granule = 32) {
  const int k_iters = cuda::ceil_div(K, block_k);
  struct tile {
    int rows, cols;
    double cost_per_step;
  };
  constexpr tile tiles_tried[] = {{128, 256, 1.0}, {128, 192, 0.77}, {128, 128, 0.55}, {64, 128, 0.3}, {64, 64, 0.18}};
  launch_plan best{256, 1, 0};
  double best_cost = 1e300;
  for (const tile& t : tiles_tried) {
    const std::int64_t tiles = static_cast<std::int64_t>(cuda::ceil_div(M, t.rows)) * cuda::ceil_div(N, t.cols);
    for (int splits = 1; splits <= 16 && splits <= k_iters; ++splits) {
      const std::int64_t units = tiles * splits;
      const std::int64_t waves = cuda::ceil_div(units, static_cast<std::int64_t>(sms));
      const int k_per_unit = cuda::ceil_div(k_iters, splits);
      const double cost = t.cost_per_step * (double(waves) * (k_per_unit + 6) + (splits > 1 ? 2.0 + 1.5 * splits : 0.0));
      if (cost < best_cost * 0.98) {  // prefer the earlier (larger, unsplit) plan on near ties
        best_cost = cost;
        best = {t.cols, splits, static_cast<int>(std::min(units, max_dense_units)), 0, -1, 0, t.rows};  // launch recounts and refuses more
      }
    }
  }
  const int tiles128 = cuda::ceil_div(M, block_m) * cuda::ceil_div(N, 128);
  const bool keep_cooperative = staged_store && K >= 4096 && best.block_n == 256;  // measured for 128 x 256 only
  if (best.block_m == 128 && best.splits == 1 && tiles128 >= 2 * sms && !keep_cooperative) best = {128, 1, tiles128, 0, 1, 1};
  // Decode: where 64-row tiles need a K split to fill the chip but 64 x 32 tiles fill most of one
  // wave unsplit (3/4 of the SMs or more), the latter stream the same W without the split's
  // workspace round trip (bench/HISTORY.md, fourth session: DeepSeek-V3 T = 64, 21.7 us against 22.5 us for 64 x 64
  // split 2). Fewer tiles would leave SMs idle for all of K.
  const int tiles32 = cuda::ceil_div(M, 64) * cuda::ceil_div(N, 32);
  const bool one_row_block = M <= 64;  // measured there; with two, clusters of 2 would pair them (not measured)
  if (one_row_block && best.block_m == 64 && best.splits > 1 && tiles32 <= sms && 4 * tiles32 >= 3 * sms) {
    best = {32, 1, tiles32, 0, -1, 0, 64};
  }
  const int tiles48 = cuda::ceil_div(M, 64) * cuda::ceil_div(N, 48);
  if (one_row_block && holds_column_granule(64, 48, column_granule) && best.block_m == 64 && best.block_n == 64 && best.splits == 1 &&
      tiles48 <= sms && 4 * tiles48 >= 3 * sms) {
    best = {48, 1, tiles48, 0, -1, 0, 64};
  }
  return best;
}

/// The cluster size `launch` uses for a plan: 2 (W multicast) when K is not split, M has at least
/// two row blocks and the tile has a clustered instance (dense_kernels; 64 x 48, the plan's tile
/// for one row block, has none), except 128 x 192 tiles; else 1.
/// \code
/// const int cluster = fp4fuse::gemm::sm90::cluster_for(fp4fuse::gemm::sm90::plan(4096, 5760, 2880, 132), 4096);  // 2
/// \endcode
inline int cluster_for(const launch_plan& lp, int M) {
  if (lp.cluster != 0) return lp.cluster;
  // 128 x 192 tiles run unclustered: with their 4-stage ring the pair's every stage waiting for both
  // CTAs' loads costs more than the multicast saves (GPT-OSS, K = 2880, T = 384 and 512, one tile
  // per CTA: 0.92-0.96x the time of clusters of 2; the 128 x 128 and 64 x 128 tiles of DeepSeek-V3
  // T = 256 and 512 and the ping-pong at T = 1024 instead take 1.13-1.32x unclustered;
  // bench/results/engine10.md, calls F-G).
  const bool pairs_gain = dense_kernels::contains(dense_key(lp, 2)) && !(lp.block_m == 128 && lp.block_n == 192);
  return lp.splits == 1 && cuda::ceil_div(M, lp.block_m) >= 2 && pairs_gain ? 2 : 1;
}

/// The work units of dense plan `lp` over M x N, its splits and cluster resolved (as `launch`
/// resolves them): column tiles x clusters of row tiles x K splits, in 64 bits. Up to 16 splits of
/// 64 x 32 tiles can pass the kernels' int where the shape passes the GEMM's checks (drawn for
/// 128 x 128 tiles): `launch` refuses more than `max_dense_units`.
/// \code
/// const fp4fuse::gemm::sm90::launch_plan p{32, /*splits=*/16, 0, /*cluster=*/1, 0, 0, /*block_m=*/64};
/// const std::int64_t u = fp4fuse::gemm::sm90::dense_units(p, 1 << 19, 1 << 20);  // 2^13 x 2^15 x 16 = 2^32
/// \endcode
constexpr std::int64_t dense_units(const launch_plan& lp, int M, int N) {
  return static_cast<std::int64_t>(cuda::ceil_div(N, lp.block_n)) * cuda::ceil_div(cuda::ceil_div(M, lp.block_m), lp.cluster) * lp.splits;
}

/// A forced plan must name a kernel that exists (dense_kernels: 128 x 256, 128 x 192, 128 x 128,
/// 64 x 256, 64 x 128, 64 x 64, 64 x 48 or 64 x 32 cooperative tiles, the 128 x 128 ping-pong with 1
/// or 2 K steps in flight; clusters of 2 where the table has them: not 64 x 48), 1..16 splits,
/// clusters of 1 or 2 only without a split, ping-pong only unsplit. Refusals say which. (Whether the epilogue takes the tile's width, the
/// launch says: 64 x 48 holds no whole NVFP4 block per consumer.)
/// \code
/// const fp4fuse::gemm::sm90::launch_plan p{256, /*splits=*/4, 0, /*cluster=*/2};
/// const fp4fuse::result r = fp4fuse::gemm::sm90::validate_plan(&p);  // bad_shape: "... cluster = 2 must be 0 (choose), 1, or 2 without a K split"
/// \endcode
inline result validate_plan(const launch_plan* p) {
  if (p == nullptr) return {};
  const char* entry = "fp4fuse::gemm::sm90::validate_plan";
  if (p->pingpong < -1 || p->pingpong > 1 || p->in_flight < 0 || p->in_flight > 2) {
    return result::with(status::bad_shape, "%s: pingpong = %d must be -1, 0 or 1 and in_flight = %d 0, 1 or 2", entry, p->pingpong, p->in_flight);
  }
  const bool pp = p->pingpong == 1;
  const int cluster = p->cluster == 2 ? 2 : 1;
  if (!dense_kernels::contains(dense_key(*p, cluster))) {
    return result::with(status::bad_shape, "%s: no dense kernel has %d x %d %s tiles in clusters of %d", entry, p->block_m, p->block_n,
                        pp ? "ping-pong" : "cooperative", cluster);
  }
  if (p->splits < 1 || p->splits > 16 || (pp && p->splits != 1)) {
    return result::with(status::bad_shape, "%s: splits = %d must be in [1, 16], and 1 for the ping-pong kernel", entry, p->splits);
  }
  if (!(p->cluster == 0 || p->cluster == 1 || (p->cluster == 2 && p->splits == 1))) {
    return result::with(status::bad_shape, "%s: cluster = %d must be 0 (choose), 1, or 2 without a K split", entry, p->cluster);
  }
  return {};
}

/// The tile shape and schedule of a grouped (MoE) launch (grouped_schedule.cuh): cooperative
/// tiles of 64 x 256, 64 x 128, 128 x 256, 128 x 128 or 192 x 128, or the ping-pong kernel's
/// 128 x 128; clusters of 1, or 2 (pairs of an expert's row blocks sharing W by multicast, or
/// along N pairs of column tiles sharing X).
struct grouped_plan {
  int block_m = 128;      ///< tile rows
  int block_n = 256;      ///< tile columns
  int cluster = 1;        ///< CTAs per cluster (1 or 2)
  bool pingpong = false;  ///< the ping-pong kernel (128 x 128 tiles)
  bool along_n = false;  ///< cluster of 2 along N (the ping-pong 128 x 128, the cooperative 192 x 128, the swap-AB kernel): pairs of column tiles share the X tile by multicast
  /// The swap-AB kernel (swap_ab.cuh; the fused NVFP4 epilogue only): 128 of W's gate/up rows
  /// (`block_n`) by up to `block_m` = 192 tokens per unit, at the width each expert's rows need;
  /// cooperative (`pingpong` false); cluster 1, or 2 along N (`along_n`: pairs of W blocks share
  /// the X tile).
  bool swap_ab = false;
  /// The dispatch table's key of this plan.
  /// \code
  /// static_assert(fp4fuse::gemm::sm90::grouped_kernels::contains(fp4fuse::gemm::sm90::grouped_plan{192, 128, 2, false, true}.key()));
  /// \endcode
  constexpr kernel_key key() const { return {block_m, block_n, cluster, along_n, pingpong, 2}; }
  /// Whether this plan's kernel takes its units at run time from a counter (grouped_takes_units;
  /// the swap-AB kernel does not), which the launch then needs (workspace::size_for).
  /// \code
  /// static_assert(fp4fuse::gemm::sm90::grouped_plan{192, 128, 2, false, true}.takes_units());
  /// \endcode
  constexpr bool takes_units() const { return !swap_ab && grouped_takes_units(block_m, pingpong); }
};

/// The grouped GEMM's instances: cooperative 64 x 256, 64 x 128, 128 x 256, 128 x 128 and the ping-pong
/// 128 x 128 (2 K steps in flight), unclustered and in clusters of 2 along M, the ping-pong in
/// clusters of 2 along N (X multicast), and the cooperative 192 x 128 in clusters of 2 along N.
/// A launch compiles these with `experimental_kernels`; by default (`planned_kernels`) only
/// `planned_grouped_kernels`, the ones plan_grouped chooses.
using grouped_kernels = kernel_list<tile_shape<64, 256, 1>, tile_shape<64, 128, 1>, tile_shape<128, 256, 1>, tile_shape<128, 128, 1>,
                                    tile_shape<128, 128, 1, true, 2>, tile_shape<64, 256, 2>, tile_shape<64, 128, 2>,
                                    tile_shape<128, 256, 2>, tile_shape<128, 128, 2>, tile_shape<128, 128, 2, true, 2>,
                                    tile_shape<128, 128, 2, true, 2, true>, tile_shape<192, 128, 2, false, 2, true>>;

/// The grouped instances plan_grouped chooses (see there): cooperative 64 x 256 and 64 x 128
/// unclustered (decode), the ping-pong 128 x 128 in clusters of 2 along N, the cooperative
/// 192 x 128 in clusters of 2 along N. What a launch compiles by default (`planned_kernels`).
using planned_grouped_kernels = kernel_list<tile_shape<64, 256, 1>, tile_shape<64, 128, 1>, tile_shape<128, 128, 2, true, 2, true>,
                                            tile_shape<192, 128, 2, false, 2, true>>;

/// The kernels a grouped launch compiles (`launch_grouped`'s, `moe::run_fused`'s, `moe::run_bf16`'s
/// and `moe::run_swiglu_bf16`'s `Kernels`): the ones `plan_grouped` chooses
/// (`planned_grouped_kernels`), the default. A forced plan that names another is refused with a
/// sentence, before anything is written.
struct planned_kernels {};
/// Every grouped instance (`grouped_kernels`) and the experimental swap-AB kernel (swap_ab.cuh),
/// none of which but the planned ones a plan chooses: for forced plans (tests, benchmarks). Per
/// epilogue (a launcher compiles two: with and without a bias) this is 12 tile kernels instead of
/// 4, and for the fused NVFP4 epilogue 2 swap-AB kernels (clusters of 1 and 2, each with 12 token
/// widths), which a program that runs the planned kernels does not pay for (docs/MOE.md: one
/// `run_fused` call compiles in 9 s instead of 23 s, 8 kernels instead of 24; the swap-AB kernels
/// alone cost examples/moe_l1.cu 120 s, bench/results/engine13.md).
/// \code
/// static_assert(!fp4fuse::gemm::sm90::compiles_swap_ab<fp4fuse::gemm::sm90::planned_kernels>);
/// static_assert(fp4fuse::gemm::sm90::compiles_swap_ab<fp4fuse::gemm::sm90::experimental_kernels>);
/// \endcode
struct experimental_kernels {};
/// True for the kernel set that compiles the swap-AB kernel.
template <class Kernels>
inline constexpr bool compiles_swap_ab = std::is_same_v<Kernels, experimental_kernels>;

/// True when `p` names a kernel of the grouped GEMM.
/// \code
/// static_assert(fp4fuse::gemm::sm90::valid({}) && !fp4fuse::gemm::sm90::valid({64, 48}));  // 128 x 256: yes; 64 x 48: no grouped kernel
/// \endcode
inline constexpr bool valid(const grouped_plan& p) {
  if (p.swap_ab) {
    return p.block_m == 192 && p.block_n == 128 && !p.pingpong && (p.cluster == 1 || p.cluster == 2) && p.along_n == (p.cluster == 2);
  }
  return grouped_kernels::contains(p.key());
}

/// The grouped tile kernels a launch with `Kernels` compiles: `planned_grouped_kernels` for
/// `planned_kernels`, every one (`grouped_kernels`) for `experimental_kernels`.
template <class Kernels>
using grouped_kernels_for = std::conditional_t<compiles_swap_ab<Kernels>, grouped_kernels, planned_grouped_kernels>;

/// True when a grouped launch with `Kernels` compiles the kernel plan `p` names (a valid plan that
/// it does not compile is refused with a sentence).
/// \code
/// static_assert(fp4fuse::gemm::sm90::compiles<fp4fuse::gemm::sm90::planned_kernels>(fp4fuse::gemm::sm90::plan_grouped(4096, 32, 5760, 2880)));
/// static_assert(!fp4fuse::gemm::sm90::compiles<fp4fuse::gemm::sm90::planned_kernels>({128, 256, 1, false}));  // no plan chooses it
/// static_assert(fp4fuse::gemm::sm90::compiles<fp4fuse::gemm::sm90::experimental_kernels>({128, 256, 1, false}));
/// \endcode
template <class Kernels>
constexpr bool compiles(const grouped_plan& p) {
  return valid(p) && (p.swap_ab ? compiles_swap_ab<Kernels> : grouped_kernels_for<Kernels>::contains(p.key()));
}

/// The plan for `rows` routed rows over `experts` experts of `n` output columns each and a
/// reduction of `k` (either 0: not given), from the rows per expert were all experts routed to (rows / experts): the host never
/// reads the routing, so the plan cannot depend on it. Up to 64 rows per expert (decode: the launch
/// streams the experts' W, and X is small) 64 x 256 cooperative tiles, whose X tile is a fifth of
/// the bytes each K step brings in, or 64 x 128 where `n` leaves the last 256-wide column tile at
/// most half full: W is one [experts * n, K] tensor, so that tile's box reads the next expert's
/// rows from DRAM for nothing (GPT-OSS's 2I = 5760, 22.5 tiles of 256: 2.2% more W bytes;
/// 64 x 128 measured 0.966-0.999x the time at T = 64 and 512, bench/results/engine2.md). Beyond
/// 64, the ping-pong kernel's 128 x 128 tiles in clusters of 2 along N: pairs of column tiles share
/// the X tile (a quarter less L2-to-SM traffic) and an expert's row blocks are never paired with an
/// empty one, as clusters along M pair an odd last block (DeepSeek-V3 T = 4096 0.83x / 0.89x the
/// time without clusters, bench/RESULTS.md; at 1,024 rows per expert, where half the experts have
/// one row block more than 8, 0.94-0.97x clusters along M in uniform routings in two runs, skewed
/// 0.97-1.08x, bench/results/engine2.md). The ping-pong hides each tile's epilogue behind the
/// other consumer's mainloop. Except where an expert's rows mostly end between 128 and 192: there
/// 128-row tiles stream each W strip twice, the second time for the ragged end, and the
/// cooperative 192 x 128 tiles (three consumer warpgroups, clusters of 2 along N, no MMAs and no X
/// for empty 64-row fragments) stream it once, at the cost of an epilogue the mainloop does not
/// hide: chosen for 128 < rows per expert <= 176, and with a long reduction (`k` >= 4096, which
/// hides more of that cost) for 120 < rows per expert <= 184. Beyond that a uniform routing sends
/// more and more experts past 192 rows (about an eighth at 177 rows per expert, a quarter at 184,
/// half at 192), each of which then needs a second tile and streams its W twice.
/// Measured on the H200 as the 192 x 128 time / the ping-pong's (uniform, skewed routing), with
/// the 192 x 128 taking its units in order (bench/results/engine20.md): DeepSeek-V3 184 rows per
/// expert 0.94-0.95, 0.85-0.86; 200: 1.20; GPT-OSS 184: 1.02-1.03. Before it did, in the fixed
/// order (bench/results/engine3.md, engine5.md): DeepSeek-V3 (K = 7168) 96 rows per expert 1.12, 1.11;
/// 112: 1.05-1.07; 120: 1.01, 1.00; 128: 0.81-0.96, 0.95-1.03; 144: 0.71, 0.77; 160: 0.61, 0.62;
/// 176: 0.92-0.95, 0.86; 184: 1.07, 0.93; 192: 1.20-1.24, 1.04 (0.91, 0.84 in engine3.md's run);
/// 208: 1.51-1.55; 224: 1.13, 1.12; GPT-OSS (K = 2880) 128: 0.97-1.08, 1.12-1.18; 144: 0.84, 0.95;
/// 160: 0.84, 0.93; 176: 0.98-1.00; 184: 1.06, 0.94; 192: 1.19-1.20, 0.86-0.92.
/// \code
/// const fp4fuse::gemm::sm90::grouped_plan p = fp4fuse::gemm::sm90::plan_grouped(512, 32, 5760, 2880);
/// // 16 rows per expert: 64 x 128 tiles (5760 = 22.5 tiles of 256)
/// \endcode
inline constexpr grouped_plan plan_grouped(int rows, int experts, int n = 0, int k = 0) {
  const double per_expert = static_cast<double>(rows) / experts;
  if (per_expert <= 64) {
    const int last = n % 256;  // columns of the last 256-wide tile (0: it is full)
    return last > 0 && last <= 128 ? grouped_plan{64, 128, 1, false} : grouped_plan{64, 256, 1, false};
  }
  const bool long_k = k >= 4096;
  if (long_k ? per_expert > 120 && per_expert <= 184 : per_expert > 128 && per_expert <= 176) return {192, 128, 2, false, true};
  return {128, 128, 2, true, true};
}

}  // namespace fp4fuse::gemm::sm90
