#pragma once
/// \file epilogue/wgmma_swap_ab.cuh
/// The fused epilogue on a swap-AB `wgmma` fragment. A GEMM for few tokens often computes
/// D^T = W X^T: W's gate/up rows are wgmma's M (64 per warpgroup) and the tokens its N (any
/// multiple of 8 up to 256, so the tile follows the tokens instead of padding them to 64 rows).
/// Each thread then holds gate/up columns of several tokens, and an NVFP4 block (16 outputs = 32
/// gate/up columns of one token) spans two warps. `wgmma_swap_ab_epilogue` turns the warpgroup's
/// fragment into token rows through shared memory and quantizes each row with the row form's code
/// (epilogue/row.cuh), so the numerics are exactly `block_codec<Format>::quantize` of each block's
/// act(gate + b) * (up + b), bit-identical to the standalone `swiglu_quantize` on the same fp32
/// gate/up values.
#include <cuda/cmath>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/epilogue/operation.cuh"
#include "fp4fuse/epilogue/output_amax.cuh"
#include "fp4fuse/epilogue/row.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/epilogue/wgmma_fragment.cuh"
#include "fp4fuse/gate_up_layout.cuh"

namespace fp4fuse {

namespace detail {

/// Floats per token row of the swap-AB scratch: the warpgroup's 64 gate/up columns per fragment and
/// 4 of padding (68 or 132 = 4 mod 32), so that each register's 32 stores hit 32 distinct banks (the
/// lanes of a quad are 2 tokens apart: 8 banks; the quads are neighbouring gate/up columns: 1
/// bank) and each thread's 16-byte row loads are conflict-free per quarter warp (a row is 17 or 33
/// 16-byte units, an odd number).
template <int Fragments = 1>
inline constexpr int swap_ab_row_floats = 64 * Fragments + 4;

/// Synchronises the 128 threads of the calling warpgroup on named barrier `id` (PTX `bar.sync`;
/// cuda::ptx has no wrapper for named barriers).
FP4FUSE_DEVICE void swap_ab_warpgroup_sync(int id) { asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory"); }

}  // namespace detail

/// Floats of shared memory `wgmma_swap_ab_epilogue` needs per warpgroup for `Tokens` tokens at a
/// time (wgmma's N, or its chunk of them) of `Fragments` fragments: `Tokens` rows of 68 floats (the
/// 64 gate/up columns and 4 of padding; 132 for two fragments), 272 bytes per token (34 KiB at 128
/// tokens; 528 bytes for two fragments).
/// \code
/// static_assert(fp4fuse::wgmma_swap_ab_scratch_floats<64> * sizeof(float) == 17408);  // a warpgroup's shared memory for 64 tokens
/// \endcode
template <int Tokens, int Fragments = 1>
inline constexpr int wgmma_swap_ab_scratch_floats = Tokens * detail::swap_ab_row_floats<Fragments>;

namespace detail {

/// The body of both `wgmma_swap_ab_epilogue` forms: `Fragments` fragments of 64 W rows each.
template <int ChunkTokens, class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate,
          int Fragments, int Registers>
FP4FUSE_DEVICE void swap_ab_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op,
                                     const float (&acc)[Fragments][Registers], tile_origin origin, float* scratch, int barrier) {
  constexpr int tokens = 2 * Registers;
  static_assert(Registers % 4 == 0 && tokens >= 8 && tokens <= 256,
                "wgmma_swap_ab_epilogue: the fragment of wgmma m64nNk16 has N / 2 registers, N (the tokens) a multiple of 8 in [8, 256]");
  constexpr int chunk = ChunkTokens == 0 ? tokens : ChunkTokens;
  static_assert(chunk % 8 == 0 && (ChunkTokens == 0 || chunk <= 128),
                "wgmma_swap_ab_epilogue: ChunkTokens is a multiple of 8, at most 128 (0: all N tokens at once)");
  static_assert(sink_traits<Sink>::stores && !sink_traits<Sink>::staged,
                "wgmma_swap_ab_epilogue: sink::direct only (each thread stores its token's row; for a staged or hand-back "
                "store, quantize the scratch's rows with row_epilogue)");
  static_assert(gate_up::is_interleaved<GateUp>, "wgmma_swap_ab_epilogue: W's gate/up rows interleaved (gate_up::interleaved<G>)");
  if constexpr (gate_up::is_interleaved<GateUp>) {
    static_assert(32 % GateUp::granule == 0, "wgmma_swap_ab_epilogue: the warpgroup's 64 gate/up rows must hold whole granules (G divides 32)");
  }
  static_assert(32 % Format::block_size == 0, "wgmma_swap_ab_epilogue: the warpgroup's 32 outputs must be whole blocks");
  using frag = wgmma_m64nN_f32_fragment<tokens>;
  static_assert(Fragments == 1 || Fragments == 2, "wgmma_swap_ab_epilogue: one or two fragments (64 or 128 gate/up rows)");
  constexpr int row_floats = swap_ab_row_floats<Fragments>;
  // Gate/up columns one thread quantizes at a time: a block's (NVFP4 32, MXFP4 64), or 64 where a
  // granule of 32 gate rows puts a block's up columns in the other half.
  constexpr int part_cols = 2 * Format::block_size > 2 * GateUp::granule ? 2 * Format::block_size : 2 * GateUp::granule;
  constexpr int parts = 64 * Fragments / part_cols;  // parts of the warpgroup's 64 or 128 columns
  if (barrier < 1 || barrier > 15) __trap();  // 0 would be __syncthreads' barrier, shared with the block's other warps
  const unsigned linear_thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int thread = static_cast<int>(linear_thread % 128);
  const auto quantize = as_hand_back(op);
  const auto& out = op.sink.out;
  float amax = 0.0f;  // max |h| over this thread's tokens inside the matrix (the output amax's partial)
  FP4FUSE_UNROLL
  for (int c = 0; c < cuda::ceil_div(tokens, chunk); ++c) {
    const int in_chunk = tokens - c * chunk < chunk ? tokens - c * chunk : chunk;  // the last chunk: what is left
    // Register i holds token 8 (i / 4) + 2 (t % 4) + i % 2: its chunk is known at compile time.
    FP4FUSE_UNROLL
    for (int i = 0; i < Registers; ++i) {
      FP4FUSE_UNROLL
      for (int f = 0; f < Fragments; ++f) {
        if ((8 * (i / 4)) / chunk == c) scratch[(frag::col(thread, i) - c * chunk) * row_floats + 64 * f + frag::row(thread, i)] = acc[f][i];
      }
    }
    swap_ab_warpgroup_sync(barrier);
    // Work items of one block each (NVFP4: a token's two blocks are two items), token-fastest so
    // that a quarter warp's 16-byte loads hit 8 distinct rows (conflict-free, 68 floats a row).
    FP4FUSE_UNROLL
    for (int pass = 0; pass < cuda::ceil_div(chunk * parts, 128); ++pass) {
      const int item = thread + 128 * pass;
      const int local = item % chunk, part = item / chunk;  // the token within the chunk, the block within its 64 columns
      if (local < in_chunk && part < parts) {
        float row[part_cols];
        const float4* src = reinterpret_cast<const float4*>(scratch + local * row_floats + part * part_cols);
        FP4FUSE_UNROLL
        for (int v = 0; v < part_cols / 4; ++v) {
          const float4 q = src[v];
          row[4 * v] = q.x;
          row[4 * v + 1] = q.y;
          row[4 * v + 2] = q.z;
          row[4 * v + 3] = q.w;
        }
        const tile_origin at{origin.row + c * chunk + local, origin.gate_up_col + part * part_cols};
        const auto q = row_epilogue(quantize, row, at);
        store_row<false>(out, at, q, nullptr);
        if constexpr (cuda::std::is_same_v<Amax, output_amax::global>) amax = max_num(amax, row_amax_partial(out, at, q));
      }
    }
    swap_ab_warpgroup_sync(barrier);  // every row of the chunk read: the scratch is free again
  }
  if constexpr (cuda::std::is_same_v<Amax, output_amax::global>) {
    combine_output_amax(op.amax.amax, amax);
  } else {
    (void)amax;
  }
}

}  // namespace detail

/// The fused epilogue on one thread's swap-AB `wgmma` m64nNk16 f32 fragment: register i of thread t
/// holds gate/up column `origin.gate_up_col + wgmma_m64nN_f32_fragment<N>::row(t, i)` of token
/// (output row) `origin.row + wgmma_m64nN_f32_fragment<N>::col(t, i)`, N = 2 * Registers tokens.
/// Warpgroup-collective: all 128 threads of a warpgroup (4 consecutive warps, the first a multiple
/// of 4 in the block's linear thread index) call it, converged, with the same `op`, `origin`,
/// `scratch` and `barrier`.
///
/// How: each thread stores its registers to `scratch` as token rows (the 64 gate/up columns of a
/// token in order), the warpgroup synchronises on named barrier `barrier`, then the 128 threads
/// share the blocks: each loads one block's gate/up values of one token (NVFP4: 32 of the token's
/// 64, so two threads per token; MXFP4, or G = 32: all 64) and quantizes them as the row form does,
/// stores them as `sink::direct` does and, with `output_amax::global`, the warpgroup combines the
/// amax. A barrier after the loads frees the scratch. With `ChunkTokens` (a multiple of 8, at most
/// 128) the tokens go through the scratch that many at a time (the last chunk holds what is left),
/// two barriers per chunk: the scratch is `wgmma_swap_ab_scratch_floats<ChunkTokens>` floats (a
/// kernel whose shared memory is mostly its ring), fewer threads may quantize at a time, and the
/// registers of later chunks stay live while earlier ones are quantized. The bytes do not depend
/// on the chunk. (A form in registers, each thread computing its own activations and the 16
/// threads of a block combining the amax by shuffles, ran 1.3-1.4x slower in the swap-AB GEMM on
/// the H200: bench/results/engine12.md, call 3; its code is in the history, 41b3844 and df299a9.)
///
/// \tparam ChunkTokens tokens per pass through the scratch (0, the default: all N at once)
/// \param op      the description (`fused_epilogue`): `sink::direct`; GateUp `gate_up::interleaved<G>`
///                with G dividing 32 (W's rows in the M dimension in that order); any format, bias,
///                amax and intermediate rounding
/// \param acc     the thread's Registers accumulators (N = 2 * Registers tokens, 8..256), in wgmma order
/// \param origin  the first token's output row and the first gate/up column (wgmma row 0; a multiple
///                of 64, so that the warpgroup's 32 outputs are whole blocks of either format)
/// \param scratch 16-byte aligned shared memory of `wgmma_swap_ab_scratch_floats<N>` floats
///                (`<ChunkTokens>` with chunks), this warpgroup's alone for the call
/// \param barrier a named barrier (1..15; 0 is __syncthreads') that no other warps use during the
///                call; another id traps
/// Output: packed rows and their base aligned to a block's bytes (8 NVFP4, 16 MXFP4), as the row
/// form stores whole blocks. Bounds and padding as the row form's: packed bytes for rows < out.rows() and blocks <
/// out.layout.scale_cols; scale bytes for rows < padded_rows() and blocks < padded_cols(), 0x00 in
/// the padding. Tokens beyond N are another tile's: nothing is written for them, so tiles whose
/// tokens and gate/up columns cover `scale_layout::padded_extent(out.layout)` write the whole scale
/// tensor (otherwise `write_scale_padding_beyond_grid` writes the rest). Bias: `column_bias`
/// indexed by gate/up column (the row form's, no alignment needed).
/// \code
/// __device__ void fused(const float (&acc)[32], std::int64_t token0, std::int64_t gate_up_col0, const float* d_S, float* scratch,
///                       const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   // acc: wgmma m64n64k16 with W's 64 gate/up rows (interleaved by 8) as A and 64 tokens of X as B;
///   // scratch: fp4fuse::wgmma_swap_ab_scratch_floats<64> floats of shared memory
///   const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*d_S), fp4fuse::sink::direct{out}};
///   fp4fuse::wgmma_swap_ab_epilogue(op, acc, {token0, gate_up_col0}, scratch, 1);
///   // or 16 tokens at a time through fp4fuse::wgmma_swap_ab_scratch_floats<16> floats:
///   // fp4fuse::wgmma_swap_ab_epilogue<16>(op, acc, {token0, gate_up_col0}, scratch, 1);
/// }
/// \endcode
template <int ChunkTokens = 0, class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate,
          int Registers>
FP4FUSE_DEVICE void wgmma_swap_ab_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op,
                                           const float (&acc)[Registers], tile_origin origin, float* scratch, int barrier) {
  detail::swap_ab_epilogue<ChunkTokens>(op, *reinterpret_cast<const float(*)[1][Registers]>(&acc), origin, scratch, barrier);
}

/// The same on two fragments of one warpgroup: W's 128 gate/up rows (fragment f holds rows
/// 64f..64f+63 as `acc[f]`, columns origin.gate_up_col + 64f onwards) by the same N tokens, as a
/// warpgroup that runs a whole 128-row tile has them. Both go through the scratch together (rows
/// of 132 floats, `wgmma_swap_ab_scratch_floats<Tokens, 2>`), so that every thread quantizes a
/// block per pass at half the passes of two calls.
/// \code
/// __device__ void fused(const float (&acc)[2][72], std::int64_t token0, std::int64_t gate_up_col0, const float* d_S, float* scratch,
///                       const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   // scratch: fp4fuse::wgmma_swap_ab_scratch_floats<32, 2> floats of shared memory
///   const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*d_S), fp4fuse::sink::direct{out}};
///   fp4fuse::wgmma_swap_ab_epilogue<32>(op, acc, {token0, gate_up_col0}, scratch, 1);  // 144 tokens x 64 outputs, 32 tokens a pass
/// }
/// \endcode
template <int ChunkTokens = 0, class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate,
          int Fragments, int Registers>
FP4FUSE_DEVICE void wgmma_swap_ab_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op,
                                           const float (&acc)[Fragments][Registers], tile_origin origin, float* scratch, int barrier) {
  detail::swap_ab_epilogue<ChunkTokens>(op, acc, origin, scratch, barrier);
}

}  // namespace fp4fuse
