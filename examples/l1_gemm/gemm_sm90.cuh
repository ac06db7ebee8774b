#pragma once
// The reference sm_90a GEMM of the L1 example: D[M, N] = X[M, K] * W[N, K]^T, BF16 in, FP32
// accumulate, one of the epilogues of epilogues.cuh applied to the accumulators in registers.
//
// Persistent and warp-specialized: warpgroup 0 is the producer (one thread issues TMA loads of
// BlockM x 64 X tiles and BlockN x 64 W tiles, 128-byte swizzled, into a shared-memory ring guarded
// by mbarriers); warpgroups 1 and 2 are consumers. In the cooperative kernel both work on one
// tile: with 128-row tiles each computes 64 rows x BlockN with wgmma m64nBlockNk16, with 64-row
// tiles (small M) each computes the 64 rows x half of the columns (64 x 32 decode tiles: the first
// computes the tile, the second writes the output's padding); then each runs the epilogue on
// its fragment while the producer already fills the ring with the next work unit's stages. In
// the ping-pong kernel (large M) each consumer owns a whole 128 x 128 tile and the two alternate,
// one's epilogue overlapping the other's mainloop. Tiles are visited M-fastest in groups of 8
// M-blocks so that concurrently running CTAs share W tiles in L2. Edges: TMA zero-fills rows
// beyond M and N and columns beyond K; the epilogues bounds-check.
//
// Small M (decode) cannot fill 132 SMs with 128 x 256 tiles, so the launcher picks the tile shape
// and a split of K that fill the chip (see `plan`). With K split, each split writes its FP32
// fragment to a workspace and the last split of a tile to arrive (an atomic counter) sums all
// splits in a fixed order, so the result does not depend on arrival order, and runs the epilogue.
//
// TMA and mbarrier operations go through CCCL's cuda::ptx; wgmma and setmaxnreg, which it does
// not wrap, are written as PTX here. Compiled for any other target the kernel traps.
#include <cuda.h>          // CUtensorMap (types only: the driver entry point is fetched at run time)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <cuda/ptx>

#include <cstdio>
#include <type_traits>
#include <utility>
#include <cstdlib>
#include <atomic>
#include <mutex>

#include "epilogues.cuh"

namespace l1_gemm::sm90 {

constexpr int block_m = 128, block_k = 64;
constexpr int threads = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int group_m = 8;    // M-blocks per raster group
constexpr int ring_bytes = 192 * 1024;

/// 64 x 32 tiles have one consumer warpgroup; the others two.
constexpr bool single_consumer_tile(int cols) { return cols == 32; }
/// Columns of one consumer's wgmma for rows x cols tiles: two consumers of a 64-row tile split N.
constexpr int consumer_columns(int rows, int cols) { return rows == 64 && !single_consumer_tile(cols) ? cols / 2 : cols; }

/// Tile shape and ring depth for BlockM x BlockN tiles: 128 x 256, 128 x 192 or 128 x 128 (each consumer
/// warpgroup computes 64 rows of the tile), 64 x 128 or 64 x 64 for small M (both consumers
/// share the 64 rows and each computes half of the columns), or 64 x 32 for decode (one consumer
/// computes the tile, the other only writes the output's padding: streaming W, not MMA issue,
/// bounds a decode GEMM, and the 16-stage ring keeps more of W in flight).
template <int BlockN, int BlockM = block_m>
struct config {
  static_assert((BlockM == 128 && (BlockN == 256 || BlockN == 192 || BlockN == 128)) ||
                    (BlockM == 64 && (BlockN == 128 || BlockN == 64 || BlockN == 32)),
                "tiles of 128 x 256, 128 x 192, 128 x 128, 64 x 128, 64 x 64 or 64 x 32");
  static constexpr int block_n = BlockN;
  static constexpr int rows = BlockM;
  static constexpr bool single_consumer = single_consumer_tile(BlockN);
  static constexpr int consumers = single_consumer ? 1 : 2;
  static constexpr bool consumers_split_n = BlockM == 64 && !single_consumer;
  /// Columns of one consumer's wgmma and its accumulators per thread.
  static constexpr int consumer_n = consumer_columns(BlockM, BlockN);
  static constexpr int registers = consumer_n / 2;
  static constexpr int a_stage_bytes = BlockM * block_k * 2;
  static constexpr int b_stage_bytes = block_n * block_k * 2;
  static constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;
  static constexpr int stages = ring_bytes / stage_bytes;  // 4: 128 x 256, 128 x 192; 6: 128 x 128; 8: 64 x 128; 12: 64 x 64; 16: 64 x 32
  // 1024 bytes of slack to align the ring to the 128-byte swizzle's 1024-byte period, barriers,
  // and one flag per consumer for the split-K hand-off.
  static constexpr std::size_t smem_bytes = std::size_t(stages) * stage_bytes + 1024 + 2 * stages * 8 + 16;
};

/// What a launch computes: the shape, the K split, and the split-K workspace.
struct params {
  int M, N, K;
  int splits;          ///< K is cut into `splits` ranges of whole 64-column blocks (1: no split)
  float* partials;     ///< splits * tiles * 2 consumers * fragment floats (splits > 1)
  unsigned* counters;  ///< tiles * 2 arrival counters, zero between launches (splits > 1)
};

namespace detail {

/// The high word of every shared-memory descriptor used here: stride byte offset 1024 bytes (8-row
/// groups of 128-byte rows, bits 32-45) and the 128-byte swizzle (layout type 1, bits 62-63).
constexpr std::uint32_t descriptor_high = (1024 >> 4) | (1u << 30);

// The wgmma wrappers spell out each accumulator register as an asm operand (the instruction takes
// them as a list): these macros hold the operand text once, in blocks of 16 registers.
#define L1_GEMM_REGS_0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define L1_GEMM_REGS_1 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define L1_GEMM_REGS_2 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define L1_GEMM_REGS_3 ", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define L1_GEMM_REGS_4 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define L1_GEMM_REGS_5 ", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define L1_GEMM_REGS_6 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define L1_GEMM_REGS_7 ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define L1_GEMM_OUTS_0(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define L1_GEMM_OUTS_1(d) \
  , "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define L1_GEMM_OUTS_2(d) \
  , "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define L1_GEMM_OUTS_3(d) \
  , "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define L1_GEMM_OUTS_4(d) \
  , "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define L1_GEMM_OUTS_5(d) \
  , "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define L1_GEMM_OUTS_6(d) \
  , "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
      "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define L1_GEMM_OUTS_7(d) \
  , "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
/// Defines wgmma_m64n<N>k16_bf16: D[64 x N] += A[64 x 16] * B[16 x N], bf16 in, f32 accumulate, A
/// and B from shared memory, given by the low words of their descriptors (descriptor_low); the
/// high word is descriptor_high. REGS / OUTS: the accumulator operands; IA, IB, IH: the operand
/// numbers of desc_a, desc_b and descriptor_high (the first three after the accumulators).
#define L1_GEMM_DEFINE_WGMMA(N, R, REGS, OUTS, IA, IB, IH)                                                   \
  __device__ __forceinline__ void wgmma_m64n##N##k16_bf16(float(&d)[R], std::uint32_t desc_a, std::uint32_t desc_b) { \
    asm volatile("{\n.reg .b64 da, db;\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"                               \
                 "mov.b64 da, {%" #IA ", %" #IH "};\nmov.b64 db, {%" #IB ", %" #IH "};\n"                    \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS "}, da, db, p, 1, 1, 0, 0;\n}\n" \
                 : OUTS                                                                                       \
                 : "r"(desc_a), "r"(desc_b), "r"(descriptor_high));                                          \
  }
L1_GEMM_DEFINE_WGMMA(256, 128, L1_GEMM_REGS_0 L1_GEMM_REGS_1 L1_GEMM_REGS_2 L1_GEMM_REGS_3 L1_GEMM_REGS_4 L1_GEMM_REGS_5 L1_GEMM_REGS_6 L1_GEMM_REGS_7,
                     L1_GEMM_OUTS_0(d) L1_GEMM_OUTS_1(d) L1_GEMM_OUTS_2(d) L1_GEMM_OUTS_3(d) L1_GEMM_OUTS_4(d) L1_GEMM_OUTS_5(d) L1_GEMM_OUTS_6(d) L1_GEMM_OUTS_7(d),
                     128, 129, 130)
L1_GEMM_DEFINE_WGMMA(192, 96, L1_GEMM_REGS_0 L1_GEMM_REGS_1 L1_GEMM_REGS_2 L1_GEMM_REGS_3 L1_GEMM_REGS_4 L1_GEMM_REGS_5,
                     L1_GEMM_OUTS_0(d) L1_GEMM_OUTS_1(d) L1_GEMM_OUTS_2(d) L1_GEMM_OUTS_3(d) L1_GEMM_OUTS_4(d) L1_GEMM_OUTS_5(d), 96, 97, 98)
L1_GEMM_DEFINE_WGMMA(128, 64, L1_GEMM_REGS_0 L1_GEMM_REGS_1 L1_GEMM_REGS_2 L1_GEMM_REGS_3,
                     L1_GEMM_OUTS_0(d) L1_GEMM_OUTS_1(d) L1_GEMM_OUTS_2(d) L1_GEMM_OUTS_3(d), 64, 65, 66)
L1_GEMM_DEFINE_WGMMA(64, 32, L1_GEMM_REGS_0 L1_GEMM_REGS_1, L1_GEMM_OUTS_0(d) L1_GEMM_OUTS_1(d), 32, 33, 34)
L1_GEMM_DEFINE_WGMMA(32, 16, L1_GEMM_REGS_0, L1_GEMM_OUTS_0(d), 16, 17, 18)
#undef L1_GEMM_DEFINE_WGMMA
#undef L1_GEMM_REGS_0
#undef L1_GEMM_OUTS_0
#undef L1_GEMM_REGS_1
#undef L1_GEMM_OUTS_1
#undef L1_GEMM_REGS_2
#undef L1_GEMM_OUTS_2
#undef L1_GEMM_REGS_3
#undef L1_GEMM_OUTS_3
#undef L1_GEMM_REGS_4
#undef L1_GEMM_OUTS_4
#undef L1_GEMM_REGS_5
#undef L1_GEMM_OUTS_5
#undef L1_GEMM_REGS_6
#undef L1_GEMM_OUTS_6
#undef L1_GEMM_REGS_7
#undef L1_GEMM_OUTS_7

/// D[64 x N] += A[64 x 16] * B[16 x N] for N in {32, 64, 128, 192, 256}.
template <int N>
__device__ __forceinline__ void wgmma_bf16(float (&d)[N / 2], std::uint32_t desc_a, std::uint32_t desc_b) {
  static_assert(N == 256 || N == 192 || N == 128 || N == 64 || N == 32, "wgmma widths of this GEMM");
  if constexpr (N == 256) {
    wgmma_m64n256k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 192) {
    wgmma_m64n192k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 128) {
    wgmma_m64n128k16_bf16(d, desc_a, desc_b);
  } else if constexpr (N == 64) {
    wgmma_m64n64k16_bf16(d, desc_a, desc_b);
  } else {
    wgmma_m64n32k16_bf16(d, desc_a, desc_b);
  }
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// Keeps the compiler from moving accumulator reads or writes across an asynchronous wgmma.
template <int Registers>
__device__ __forceinline__ void fence_accumulators(float (&acc)[Registers]) {
#pragma unroll
  for (int i = 0; i < Registers; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}
template <int Count>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Count));
}
template <int Count>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Count));
}
/// The shared::cluster address of `smem` in the CTA of cluster rank `rank` (cuda::ptx has no mapa).
__device__ __forceinline__ std::uint32_t cluster_address(const void* smem, std::uint32_t rank) {
  std::uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(out)
               : "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(smem))), "r"(rank));
  return out;
}
/// Arrives on an mbarrier of any CTA of the cluster, by its shared::cluster address.
__device__ __forceinline__ void arrive_cluster(std::uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}
/// Synchronises the 128 threads of one consumer warpgroup (named barrier 1 + consumer).
__device__ __forceinline__ void warpgroup_sync(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}

/// The low word of the shared-memory matrix descriptor of a K-major operand tile written by TMA
/// with 128-byte swizzle: start address >> 4 (bits 0-13) and a leading byte offset of 1 (bits
/// 16-29, unused by this layout); the high word is descriptor_high. Adding 2 (32 bytes >> 4) steps
/// K by 16 within the swizzle atom, adding bytes >> 4 moves to another tile of the ring: shared
/// addresses stay below 256 KiB, so these 32-bit additions never carry into the high word, and the
/// mainloop does 32-bit arithmetic only (uniform registers, no 64-bit adds).
__device__ __forceinline__ std::uint32_t descriptor_low(const void* tile) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
  return ((addr & 0x3FFFF) >> 4) | (1u << 16);
}

/// The calling thread's warpgroup, as a value the compiler knows is the same across the warp (a
/// shuffle from lane 0), so that what the mainloop derives from it (ring positions, descriptors)
/// lives in uniform registers instead of being recomputed per thread and moved with R2UR.
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x / 128), 0);
}

/// True in one thread of a warpgroup (lane 0 of its first warp); the other three warps skip the
/// guarded code by a uniform branch instead of issuing it predicated off.
__device__ __forceinline__ bool warpgroup_leader() {
  const bool first_warp = __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x / 32 % 4), 0) == 0;
  return first_warp && threadIdx.x % 32 == 0;
}

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

/// Fetches a tensor map into the TMA unit's descriptor cache ahead of its first use (cuda::ptx has
/// no prefetch.tensormap).
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap& map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(&map)) : "memory");
}

__device__ __forceinline__ void wait_parity(std::uint64_t* barrier, std::uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(barrier, parity)) {
  }
}

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

/// The output's padding beyond a tile: the tiles cover round_up(M, BlockM) x round_up(N, BlockN),
/// and with 64-row or 32-, 64- or 192-wide tiles that can end short of a multiple of 128.
/// Epilogues whose output is padded to 128 rows and 128 gate/up columns (the NVFP4 scales' 128 x 4
/// layout, whose padding is written as 0x00) get the rest from the last tile before it: rows >= M
/// and columns >= N are beyond the output, so only that padding is written (epilogues.cuh:
/// `padding`). With clusters of 2 the peer CTA's tile covers the rows. (row0, col0): the calling
/// warpgroup's part of the tile.
template <class Cfg, int Cluster, class Epilogue, int Registers>
__device__ __forceinline__ void pad_beyond_tile(const Epilogue& epi, const float (&acc)[Registers], const work_unit& u,
                                                const params& prm, index_t row0, index_t col0) {
  const index_t tile_end_row = static_cast<index_t>(u.m_blk + 1) * Cfg::rows;
  const index_t tile_end_col = static_cast<index_t>(u.n_blk + 1) * Cfg::block_n;
  const bool rows_end_here = Cluster == 1 && tile_end_row >= prm.M;
  const index_t pad_row_end = rows_end_here ? (tile_end_row + 127) / 128 * 128 : tile_end_row;
  const index_t pad_col_end = tile_end_col >= prm.N ? (tile_end_col + 127) / 128 * 128 : tile_end_col;
  for (index_t r = row0; r < row0 + (pad_row_end - tile_end_row) + Cfg::rows; r += Cfg::rows) {
    for (index_t c = col0; c < col0 + (pad_col_end - tile_end_col) + Cfg::block_n; c += Cfg::block_n) {
      if (r != row0 || c != col0) write_padding<Cfg::consumer_n>(epi, acc, r, c);
    }
  }
}

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

/// All threads of the CTA (Cluster == 1) or of the cluster (Cluster == 2) meet.
template <int Cluster>
__device__ __forceinline__ void cluster_sync() {
  if constexpr (Cluster > 1) {
    cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
    cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
  } else {
    __syncthreads();
  }
}

/// Thread 0 initialises the ring's barriers (full: the producer's arrive + the TMA bytes; empty:
/// `empty_arrivals` per phase); then the CTA, or the cluster, synchronises so that every CTA's
/// barriers exist before any TMA multicast or remote arrive reaches them.
template <class Cfg, int Cluster>
__device__ __forceinline__ void init_ring(const ring<Cfg>& r, std::uint32_t empty_arrivals) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::stages; ++s) {
      cuda::ptx::mbarrier_init(&r.full[s], 1);
      cuda::ptx::mbarrier_init(&r.empty[s], empty_arrivals);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  cluster_sync<Cluster>();
}

/// The producer (one thread): the X and W tiles of every K step of the CTA's units, in order,
/// into the ring. With clusters each CTA loads half of the W tile and multicasts it to both CTAs'
/// slots (same offsets).
template <class Cfg, int Cluster>
__device__ __forceinline__ void produce(const ring<Cfg>& r, const CUtensorMap& tma_x, const CUtensorMap& tma_w,
                                        const unit_schedule<Cfg, Cluster>& sched) {
  using cfg = Cfg;
  constexpr int BlockN = cfg::block_n;
  int stage = 0;
  std::uint32_t phase = 0;
  for (int unit = sched.first; unit < sched.units; unit += sched.stride) {
    const work_unit u = sched.at(unit);
    for (int k = u.k_begin; k < u.k_end; ++k) {
      wait_parity(&r.empty[stage], phase ^ 1);
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &r.full[stage], cfg::stage_bytes);
      const std::int32_t xc[2] = {k * block_k, u.m_blk * cfg::rows};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.a + stage * cfg::a_stage_bytes,
                                      &tma_x, xc, &r.full[stage]);
      if constexpr (Cluster == 1) {
        const std::int32_t wc[2] = {k * block_k, u.n_blk * BlockN};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, r.b + stage * cfg::b_stage_bytes,
                                        &tma_w, wc, &r.full[stage]);
      } else {
        constexpr int half_rows = BlockN / 2;
        const std::int32_t wc[2] = {k * block_k, u.n_blk * BlockN + sched.rank * half_rows};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                        r.b + stage * cfg::b_stage_bytes + sched.rank * half_rows * 128, &tma_w, wc,
                                        &r.full[stage], static_cast<std::uint16_t>(0x3));
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
__device__ __forceinline__ void release_slot(std::uint64_t* empty_slot) {
  if constexpr (Cluster == 1) {
    cuda::ptx::mbarrier_arrive(empty_slot);
  } else {
    for (int r = 0; r < Cluster; ++r) arrive_cluster(cluster_address(empty_slot, static_cast<std::uint32_t>(r)));
  }
}

}  // namespace detail

/// Cluster = 2: the two CTAs of a cluster take vertically adjacent tiles (same W columns); each
/// loads half of the W tile and multicasts it to both, halving W's L2-to-SM traffic. A ring slot
/// is refilled only when the consumers of both CTAs have released it. No K split with clusters.
template <int BlockM, int BlockN, int Cluster, class Epilogue>
__global__ void __launch_bounds__(threads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm, Epilogue epi) {
#if FP4FUSE_ARCH_IS_SM90A
  static_assert(Cluster == 1 || Cluster == 2, "clusters of 1 or 2 CTAs along M");
  using cfg = config<BlockN, BlockM>;
  constexpr int stages = cfg::stages;
  extern __shared__ unsigned char smem_raw[];
  const detail::ring<cfg> ring(smem_raw);
  auto* last_flag = static_cast<int*>(ring.hand_off);
  const detail::unit_schedule<cfg, Cluster> sched(prm, prm.splits);
  const int warpgroup = detail::warpgroup_index();
  if (threadIdx.x == 0) {
    detail::prefetch_tensor_map(tma_x);
    detail::prefetch_tensor_map(tma_w);
    detail::prefetch_epilogue(epi);
  }
  detail::init_ring<cfg, Cluster>(ring, cfg::consumers * Cluster);  // empty: each consumer warpgroup of the cluster

  if (warpgroup == 0) {
    detail::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) detail::produce(ring, tma_x, tma_w, sched);
  } else {
    detail::setmaxnreg_inc<232>();
    constexpr int registers = cfg::registers;
    // 128-row tiles: consumer c computes rows 64c .. 64c + 63; 64-row tiles: columns
    // c * BlockN / 2 onwards (the same X tile, its half of the W tile); 64 x 32: consumer 0 all.
    const int consumer = warpgroup - 1;
    const int thread = static_cast<int>(threadIdx.x % 128);
    const bool leader = detail::warpgroup_leader();
    const std::uint32_t a_desc0 = detail::descriptor_low(ring.a + (cfg::consumers_split_n ? 0 : consumer * 64 * 128));
    const std::uint32_t b_desc0 = detail::descriptor_low(ring.b + (cfg::consumers_split_n ? consumer * cfg::consumer_n * 128 : 0));
    int stage = 0;
    std::uint32_t phase = 0;
    const bool active = consumer < cfg::consumers;  // 64 x 32 tiles: the second consumer has no MMAs
    // ... and, where the epilogue writes its padding without accumulators (`padding`), writes the
    // padding beyond each tile while the first consumer runs the mainloop: at decode every CTA's
    // tile ends at the edge, and its padding would otherwise follow its epilogue (measured: about
    // 190 of the 1,000 instructions a consumer warp issues after the mainloop, one warp per scheduler).
    constexpr bool helper_pads = cfg::single_consumer && detail::has_padding<Epilogue, cfg::consumer_n>;
    for (int unit = active ? sched.first : sched.units; unit < sched.units; unit += sched.stride) {
      const detail::work_unit u = sched.at(unit);
      float acc[registers];
#pragma unroll
      for (int i = 0; i < registers; ++i) acc[i] = 0.0f;
      int previous = -1;
      for (int k = u.k_begin; k < u.k_end; ++k) {
        detail::wait_parity(&ring.full[stage], phase);
        const std::uint32_t desc_a = a_desc0 + stage * (cfg::a_stage_bytes >> 4);
        const std::uint32_t desc_b = b_desc0 + stage * (cfg::b_stage_bytes >> 4);
        detail::fence_accumulators(acc);
        detail::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < block_k / 16; ++kk) detail::wgmma_bf16<cfg::consumer_n>(acc, desc_a + 2 * kk, desc_b + 2 * kk);
        detail::wgmma_commit();
        // Keep one stage of MMAs in flight; the one before it has finished reading its stage.
        detail::wgmma_wait<1>();
        detail::fence_accumulators(acc);
        if (previous >= 0 && leader) detail::release_slot<Cluster>(&ring.empty[previous]);
        previous = stage;
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
      detail::wgmma_wait<0>();
      detail::fence_accumulators(acc);
      if (previous >= 0 && thread == 0) detail::release_slot<Cluster>(&ring.empty[previous]);

      const index_t row0 = static_cast<index_t>(u.m_blk) * BlockM + (cfg::consumers_split_n ? 0 : 64 * consumer);
      const index_t col0 = static_cast<index_t>(u.n_blk) * BlockN + (cfg::consumers_split_n ? consumer * cfg::consumer_n : 0);
      if (prm.splits > 1) {
        if (row0 >= prm.M) {
          // Rows wholly beyond M: every split's sum is 0; split 0 alone writes the scale padding.
          if (u.split != 0) continue;
        } else {
          // Publish this split's fragment, then the last split of the tile to arrive reduces.
          const std::size_t slot = (static_cast<std::size_t>(u.tile) * 2 + consumer) * prm.splits;
          float* mine = prm.partials + (slot + u.split) * (registers * 128);
#pragma unroll
          for (int i = 0; i < registers; ++i) __stcg(mine + i * 128 + thread, acc[i]);
          __threadfence();
          detail::warpgroup_sync(consumer);
          if (thread == 0) {
            unsigned* counter = prm.counters + u.tile * 2 + consumer;
            const unsigned arrived = atomicAdd(counter, 1u);
            const bool last = arrived == static_cast<unsigned>(prm.splits - 1);
            if (last) *counter = 0;  // ready for the next launch
            last_flag[consumer] = last;
          }
          detail::warpgroup_sync(consumer);
          if (!last_flag[consumer]) continue;
          __threadfence();
          // Sum the splits in index order: the same bits whichever split arrived last.
#pragma unroll
          for (int i = 0; i < registers; ++i) acc[i] = 0.0f;
          for (int s = 0; s < prm.splits; ++s) {
            const float* part = prm.partials + (slot + s) * (registers * 128);
#pragma unroll
            for (int i = 0; i < registers; ++i) acc[i] += __ldcg(part + i * 128 + thread);
          }
        }
      }
      epi.warpgroup(acc, row0, col0);
      if constexpr (!helper_pads) detail::pad_beyond_tile<cfg, Cluster>(epi, acc, u, prm, row0, col0);
    }
    if constexpr (helper_pads) {
      if (!active) {
        // The idle consumer writes the padding beyond every unit's tile (split 0 stands for its tile).
        const float no_accumulators[registers] = {};  // padding() reads none
        for (int unit = sched.first; unit < sched.units; unit += sched.stride) {
          const detail::work_unit u = sched.at(unit);
          if (u.split != 0) continue;
          detail::pad_beyond_tile<cfg, Cluster>(epi, no_accumulators, u, prm, static_cast<index_t>(u.m_blk) * BlockM,
                                                static_cast<index_t>(u.n_blk) * BlockN);
        }
      }
    }
  }
  // No CTA may leave while its peer can still multicast into it or arrive on its barriers.
  if constexpr (Cluster > 1) detail::cluster_sync<Cluster>();
#else
  (void)tma_x, (void)tma_w, (void)prm, (void)epi;
  __trap();  // built for a target without wgmma: never write nothing silently
#endif
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
/// A consumer keeps the MMAs of `InFlight` K steps (1 or 2) queued on the tensor cores, so that
/// the other consumer's epilogue, competing for the same issue slots, can delay its next issue by
/// up to that many K steps without the tensor cores running dry; the stages they read are held.
template <int Cluster, int InFlight, class Epilogue>
__global__ void __launch_bounds__(threads, 1)
    gemm_pingpong_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_w, params prm,
                         Epilogue epi) {
#if FP4FUSE_ARCH_IS_SM90A
  static_assert(Cluster == 1 || Cluster == 2, "clusters of 1 or 2 CTAs along M");
  static_assert(InFlight == 1 || InFlight == 2, "1 or 2 K steps of MMAs in flight");
  constexpr int block_n = 128;
  using cfg = config<block_n>;
  constexpr int stages = cfg::stages;
  extern __shared__ unsigned char smem_raw[];
  const detail::ring<cfg> ring(smem_raw);
  auto* order = static_cast<std::uint64_t*>(ring.hand_off);  // order[c]: consumer c may start its next mainloop
  const detail::unit_schedule<cfg, Cluster> sched(prm, 1);
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
    detail::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) detail::produce(ring, tma_x, tma_w, sched);
  } else {
    detail::setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const int thread = static_cast<int>(threadIdx.x % 128);
    const bool leader = detail::warpgroup_leader();
    const std::uint32_t a_desc0 = detail::descriptor_low(ring.a), b_desc0 = detail::descriptor_low(ring.b);
    int position = consumer * k_iters;  // ring position of this consumer's next stage
    std::uint32_t turn_phase = 0;
    for (int unit = sched.first + consumer * sched.stride; unit < sched.units; unit += 2 * sched.stride, position += 2 * k_iters) {
      if (position > 0) {  // every mainloop but the CTA's first waits for the other's to pass
        detail::wait_parity(&order[consumer], turn_phase);
        turn_phase ^= 1;
      }
      const detail::work_unit u = sched.at(unit);
      int stage = position % stages;
      std::uint32_t phase = static_cast<std::uint32_t>(position / stages) & 1u;
      float acc[2][block_n / 2];  // rows 0..63 and 64..127 of the tile
#pragma unroll
      for (int i = 0; i < block_n / 2; ++i) acc[0][i] = acc[1][i] = 0.0f;
      for (int k = 0; k < k_iters; ++k) {
        detail::wait_parity(&ring.full[stage], phase);
        const std::uint32_t desc_a = a_desc0 + stage * (cfg::a_stage_bytes >> 4);
        const std::uint32_t desc_b = b_desc0 + stage * (cfg::b_stage_bytes >> 4);
        detail::fence_accumulators(acc[0]);
        detail::fence_accumulators(acc[1]);
        detail::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < block_k / 16; ++kk) {
          detail::wgmma_m64n128k16_bf16(acc[0], desc_a + 2 * kk, desc_b + 2 * kk);
          detail::wgmma_m64n128k16_bf16(acc[1], desc_a + (64 * 128 >> 4) + 2 * kk, desc_b + 2 * kk);
        }
        detail::wgmma_commit();
        detail::wgmma_wait<InFlight>();
        detail::fence_accumulators(acc[0]);
        detail::fence_accumulators(acc[1]);
        // The MMAs of K step k - InFlight have finished reading their stage.
        if (k >= InFlight && leader) detail::release_slot<Cluster>(&ring.empty[(stage + stages - InFlight) % stages]);
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
      if (thread == 0) cuda::ptx::mbarrier_arrive(&order[1 - consumer]);  // all its stages arrived: the other may go
      detail::wgmma_wait<0>();
      detail::fence_accumulators(acc[0]);
      detail::fence_accumulators(acc[1]);
      if (thread == 0) {
        for (int d = 1; d <= InFlight && d <= k_iters; ++d) detail::release_slot<Cluster>(&ring.empty[(stage + stages - d) % stages]);
      }
      const index_t row0 = static_cast<index_t>(u.m_blk) * block_m, col0 = static_cast<index_t>(u.n_blk) * block_n;
      epi.warpgroup(acc[0], row0, col0);
      epi.warpgroup(acc[1], row0 + 64, col0);
    }
  }
  if constexpr (Cluster > 1) detail::cluster_sync<Cluster>();
#else
  (void)tma_x, (void)tma_w, (void)prm, (void)epi;
  __trap();
#endif
}

/// A 2D row-major BF16 tensor map [outer, inner] with a box of [box_outer, 64] and 128-byte swizzle.
inline cudaError_t make_tensor_map(CUtensorMap* map, const __nv_bfloat16* base, std::uint64_t inner, std::uint64_t outer,
                                   std::uint32_t box_outer) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      fn = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (encode == nullptr) return cudaErrorNotSupported;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * sizeof(__nv_bfloat16)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(block_k), box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(base), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/// Tile shape, K split and schedule of a launch.
struct launch_plan {
  int block_n, splits, units;
  int cluster = 0;    ///< CTAs per cluster along M (0: choose: 2 when K is not split and M has 2+ tiles)
  int pingpong = -1;  ///< 1: gemm_pingpong_kernel (128 x 128 per warpgroup, no split); 0 or -1: cooperative
  int in_flight = 0;  ///< ping-pong: K steps of MMAs a consumer keeps queued (1 or 2; 0: 2)
  int block_m = 128;  ///< tile rows: 128, or 64 (64 x 128, 64 x 64 and 64 x 32 tiles, cooperative only)
};

/// The plan for a problem: the tile shape and K split with the least estimated time on the
/// busiest SM, in units of one 128 x 256 x 64 MMA step: waves x (K blocks per unit + a fixed cost
/// per unit for pipeline fill and epilogue, about 6 steps) x the tile's relative cost per step
/// (128 x 192: three quarters of the work, 3% dearer; 128 x 128: half the work, 10% dearer; 64-row tiles: a quarter or an eighth of the work, dearer
/// per MMA since both consumers read the same X tile), and with K split the workspace round trip
/// (about 2 steps plus 1.5 per split, the last split reading every split's fragment back). Then,
/// with two or more 128 x 128 tiles per SM, the ping-pong schedule, which hides each tile's
/// epilogue behind the other consumer's mainloop (bench/RESULTS.md: for every epilogue once the
/// mainloop's issue was cut to 70 instructions per K step, with two K steps of MMAs in flight).
/// Last, for decode (one row block), 64 x 32 tiles unsplit where the 64-row choice split K and 64 x 32
/// tiles fill 3/4 or more of the SMs in one wave.
inline launch_plan plan(int M, int N, int K, int sms) {
  const int k_iters = (K + block_k - 1) / block_k;
  struct tile {
    int rows, cols;
    double cost_per_step;
  };
  constexpr tile tiles_tried[] = {{128, 256, 1.0}, {128, 192, 0.77}, {128, 128, 0.55}, {64, 128, 0.3}, {64, 64, 0.18}};
  launch_plan best{256, 1, 0};
  double best_cost = 1e300;
  for (const tile& t : tiles_tried) {
    const int tiles = ((M + t.rows - 1) / t.rows) * ((N + t.cols - 1) / t.cols);
    for (int splits = 1; splits <= 16 && splits <= k_iters; ++splits) {
      const int units = tiles * splits;
      const int waves = (units + sms - 1) / sms;
      const int k_per_unit = (k_iters + splits - 1) / splits;
      const double cost = t.cost_per_step * (double(waves) * (k_per_unit + 6) + (splits > 1 ? 2.0 + 1.5 * splits : 0.0));
      if (cost < best_cost * 0.98) {  // prefer the earlier (larger, unsplit) plan on near ties
        best_cost = cost;
        best = {t.cols, splits, units, 0, -1, 0, t.rows};
      }
    }
  }
  const int tiles128 = ((M + block_m - 1) / block_m) * ((N + 127) / 128);
  if (best.block_m == 128 && best.splits == 1 && tiles128 >= 2 * sms) best = {128, 1, tiles128, 0, 1, 2};
  // Decode: where 64-row tiles need a K split to fill the chip but 64 x 32 tiles fill most of one
  // wave unsplit (3/4 of the SMs or more), the latter stream the same W without the split's
  // workspace round trip (bench/RESULTS.md: DeepSeek-V3 T = 64, 21.7 us against 22.5 us for 64 x 64
  // split 2). Fewer tiles would leave SMs idle for all of K.
  const int tiles32 = ((M + 63) / 64) * ((N + 31) / 32);
  const bool one_row_block = M <= 64;  // measured there; with two, clusters of 2 would pair them (not measured)
  if (one_row_block && best.block_m == 64 && best.splits > 1 && tiles32 <= sms && 4 * tiles32 >= 3 * sms) {
    best = {32, 1, tiles32, 0, -1, 0, 64};
  }
  return best;
}

/// The cluster size `launch` uses for a plan: 2 (W multicast) when K is not split and M has at
/// least two row blocks, else 1.
inline int cluster_for(const launch_plan& lp, int M) {
  if (lp.cluster != 0) return lp.cluster;
  return lp.splits == 1 && (M + lp.block_m - 1) / lp.block_m >= 2 ? 2 : 1;
}

/// A forced plan must name a kernel that exists: 128 x 256, 128 x 192, 128 x 128, 64 x 128, 64 x 64 or 64 x 32 tiles,
/// 1..16 splits, clusters of 1 or 2 only without a split, ping-pong only 128 x 128 and unsplit.
inline fp4fuse::result validate_plan(const launch_plan* p) {
  if (p == nullptr) return {};
  const bool tile_ok = (p->block_m == 128 && (p->block_n == 256 || p->block_n == 192 || p->block_n == 128)) ||
                       (p->block_m == 64 && (p->block_n == 128 || p->block_n == 64 || p->block_n == 32) && p->pingpong != 1);
  const bool ok = tile_ok && p->splits >= 1 && p->splits <= 16 &&
                  (p->cluster == 0 || p->cluster == 1 || (p->cluster == 2 && p->splits == 1)) &&
                  (p->pingpong != 1 || (p->block_n == 128 && p->splits == 1)) && p->pingpong >= -1 && p->pingpong <= 1 &&
                  p->in_flight >= 0 && p->in_flight <= 2;
  return ok ? fp4fuse::result{} : fp4fuse::result{fp4fuse::status::bad_shape};
}

/// The split-K workspace of one device: grown on demand, counters zeroed on `stream` when
/// allocated (the kernel leaves them zero). Shared by all launches on that device: launches that
/// split K must not run concurrently, and an aborted one leaves the counters undefined.
struct workspace {
  float* partials = nullptr;
  unsigned* counters = nullptr;
  std::size_t partial_floats = 0, counter_count = 0;
};
inline fp4fuse::result reserve_workspace(workspace& ws, std::size_t floats, std::size_t counters, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  if (floats > ws.partial_floats) {
    if (ws.partials != nullptr) cudaFree(ws.partials);
    ws.partials = nullptr;
    ws.partial_floats = 0;
    if ((err = cudaMalloc(&ws.partials, floats * sizeof(float))) != cudaSuccess) return {fp4fuse::status::cuda_error, err};
    ws.partial_floats = floats;
  }
  if (counters > ws.counter_count) {
    if (ws.counters != nullptr) cudaFree(ws.counters);
    ws.counters = nullptr;
    ws.counter_count = 0;
    if ((err = cudaMalloc(&ws.counters, counters * sizeof(unsigned))) != cudaSuccess) return {fp4fuse::status::cuda_error, err};
    if ((err = cudaMemsetAsync(ws.counters, 0, counters * sizeof(unsigned), stream)) != cudaSuccess) {
      return {fp4fuse::status::cuda_error, err};
    }
    ws.counter_count = counters;
  }
  return {};
}

/// Launches one of the two kernels: tensor maps, shared-memory size, cluster shape, a persistent
/// grid of at most the resident CTAs.
template <int BlockM, int BlockN, int Cluster, bool Pingpong, class Epilogue, int InFlight = 2>
fp4fuse::result launch_tiles(const __nv_bfloat16* x, const __nv_bfloat16* w, params prm, int units, int device, int sms,
                             const Epilogue& epi, cudaStream_t stream) {
  using cfg = config<BlockN, BlockM>;
  auto* kernel = [] {
    if constexpr (Pingpong) {
      return &gemm_pingpong_kernel<Cluster, InFlight, Epilogue>;
    } else {
      return &gemm_kernel<BlockM, BlockN, Cluster, Epilogue>;
    }
  }();
  cudaLaunchConfig_t launch{};
  cudaLaunchAttribute cluster_dims{};
  cluster_dims.id = cudaLaunchAttributeClusterDimension;
  cluster_dims.val.clusterDim.x = Cluster;
  cluster_dims.val.clusterDim.y = 1;
  cluster_dims.val.clusterDim.z = 1;
  launch.blockDim = dim3(threads);
  launch.dynamicSmemBytes = cfg::smem_bytes;
  launch.stream = stream;
  launch.attrs = &cluster_dims;
  launch.numAttrs = 1;
  // The shared-memory opt-in on every call (cheap, and a context re-created by cudaDeviceReset
  // starts without it); the image check and the number of clusters resident at once (the grid of
  // every later launch) once per kernel and device, cached only when they succeed.
  static std::atomic<int> resident_per_device[64];  // 0: not known yet
  if (device < 0 || device >= 64) return {fp4fuse::status::cuda_error, cudaErrorInvalidDevice};
  int resident = resident_per_device[device].load(std::memory_order_relaxed);
  if (resident == 0) {
    if (const fp4fuse::result image = fp4fuse::detail::check_kernel_image(kernel); !image) return image;
  }
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(cfg::smem_bytes));
  if (err != cudaSuccess) return {fp4fuse::status::cuda_error, err};
  if (resident == 0) {
    resident = sms / Cluster;  // clusters that fit at once (1 CTA per SM)
    if constexpr (Cluster > 1) {
      launch.gridDim = dim3(static_cast<unsigned>(Cluster * resident));
      if ((err = cudaOccupancyMaxActiveClusters(&resident, kernel, &launch)) != cudaSuccess) return {fp4fuse::status::cuda_error, err};
      if (resident < 1) return {fp4fuse::status::cuda_error, cudaErrorInvalidConfiguration};
    }
    resident_per_device[device].store(resident, std::memory_order_relaxed);
  }
  CUtensorMap tma_x{}, tma_w{};
  err = make_tensor_map(&tma_x, x, static_cast<std::uint64_t>(prm.K), static_cast<std::uint64_t>(prm.M), BlockM);
  if (err == cudaSuccess) {
    err = make_tensor_map(&tma_w, w, static_cast<std::uint64_t>(prm.K), static_cast<std::uint64_t>(prm.N), BlockN / Cluster);
  }
  if (err != cudaSuccess) return {fp4fuse::status::cuda_error, err};
  launch.gridDim = dim3(static_cast<unsigned>(Cluster * std::min(units, resident)));
  if (std::getenv("L1_GEMM_VERBOSE") != nullptr) {
    std::fprintf(stderr, "sm90 gemm: M=%d N=%d K=%d %s tile %dx%d split %d cluster %d: %d units on %u CTAs (%d clusters resident)\n",
                 prm.M, prm.N, prm.K, Pingpong ? "ping-pong" : "cooperative", BlockM, BlockN, prm.splits, Cluster, units,
                 launch.gridDim.x, resident);
  }
  err = cudaLaunchKernelEx(&launch, kernel, tma_x, tma_w, prm, epi);
  if (err != cudaSuccess) return {fp4fuse::status::cuda_error, err};
  return fp4fuse::detail::launch_result();
}

/// A kernel instance's tile and schedule as a type, for `launch`'s dispatch.
template <int M, int N, bool Pingpong = false, int InFlight = 2>
struct tile_shape {
  static constexpr int m = M, n = N, in_flight = InFlight;
  static constexpr bool pingpong = Pingpong;
};

/// Launches the GEMM with epilogue `epi`. The caller (l1_gemm::gemm) has validated the arguments
/// and `force` (validate_plan), and checked that the device is an sm_90 with this build's sm_90a
/// image. `force` overrides the plan (tests use it to cover every tile width and split).
template <class Epilogue>
fp4fuse::result launch(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K, const Epilogue& epi,
                       cudaStream_t stream, const launch_plan* force = nullptr) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return {fp4fuse::status::cuda_error, err};
  launch_plan lp = force != nullptr ? *force : plan(M, N, K, sms);
  const int tiles_m = (M + lp.block_m - 1) / lp.block_m;
  const int tiles = tiles_m * ((N + lp.block_n - 1) / lp.block_n);
  lp.splits = std::max(1, std::min(lp.splits, (K + block_k - 1) / block_k));
  lp.cluster = cluster_for(lp, M);
  lp.units = (tiles / tiles_m) * ((tiles_m + lp.cluster - 1) / lp.cluster) * lp.splits;
  params prm{M, N, K, lp.splits, nullptr, nullptr};
  if (lp.splits > 1) {
    static workspace per_device[64];
    static std::mutex ws_mutex;
    if (device < 0 || device >= 64) return {fp4fuse::status::cuda_error, cudaErrorInvalidDevice};
    const std::lock_guard<std::mutex> lock(ws_mutex);
    workspace& ws = per_device[device];
    const int registers = consumer_columns(lp.block_m, lp.block_n) / 2;  // accumulators per consumer thread
    const std::size_t floats = static_cast<std::size_t>(tiles) * lp.splits * 2 * registers * 128;
    if (const fp4fuse::result r = reserve_workspace(ws, floats, static_cast<std::size_t>(tiles) * 2, stream); !r) return r;
    prm.partials = ws.partials;
    prm.counters = ws.counters;
  }
  const int u = lp.units;
  // Every (tile, schedule) exists for clusters of 1 and 2; `clustered` picks the instance.
  const auto clustered = [&](auto tile) {
    using shape = decltype(tile);
    return lp.cluster == 2
               ? launch_tiles<shape::m, shape::n, 2, shape::pingpong, Epilogue, shape::in_flight>(x, w, prm, u, device, sms, epi, stream)
               : launch_tiles<shape::m, shape::n, 1, shape::pingpong, Epilogue, shape::in_flight>(x, w, prm, u, device, sms, epi, stream);
  };
  if (lp.pingpong == 1) {
    return lp.in_flight == 1 ? clustered(tile_shape<128, 128, true, 1>{}) : clustered(tile_shape<128, 128, true, 2>{});
  }
  if (lp.block_m == 64) {
    return lp.block_n == 128  ? clustered(tile_shape<64, 128>{})
           : lp.block_n == 64 ? clustered(tile_shape<64, 64>{})
                              : clustered(tile_shape<64, 32>{});
  }
  return lp.block_n == 256   ? clustered(tile_shape<128, 256>{})
         : lp.block_n == 192 ? clustered(tile_shape<128, 192>{})
                             : clustered(tile_shape<128, 128>{});
}

}  // namespace l1_gemm::sm90
