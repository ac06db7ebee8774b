#pragma once
/// \file epilogue/swiglu_quantize.cuh
/// The fragment adapters of the fused epilogue (`fused_epilogue`, epilogue/operation.cuh):
/// `mma_epilogue` for a warp's `mma.sync` m16n8 f32 accumulators and `wgmma_epilogue` for a
/// warpgroup's `wgmma` m64nNk16 ones, whose columns are gate/up interleaved in granules of 8. The
/// activations go out as packed E2M1 plus block scales straight from registers, through any sink
/// (direct, staged, hand-back), with the optional bias and output amax.
///
/// Per row, 16 output columns form one NVFP4 block: 2 granules = 4 n8 tiles (gate, up, gate, up).
/// Each lane holds 4 of the block's 16 activations (columns 2t, 2t+1, 8+2t, 8+2t+1 for
/// t = lane % 4); the four lanes of a quad share the amax, scale and packing work of four blocks
/// at a time (see `mma_epilogue`, "How"). Numerics are exactly `block_codec<Format>` on the
/// block's activations: bit-identical to the standalone `swiglu_quantize` kernel on the same fp32
/// gate/up values (tests/epilogue/swiglu_quantize.cu).
#include <cuda/cmath>
#include <cuda/ptx>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/epilogue/bulk_store.cuh"
#include "fp4fuse/epilogue/mma_fragment.cuh"
#include "fp4fuse/epilogue/operation.cuh"
#include "fp4fuse/epilogue/output_amax.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/epilogue/wgmma_fragment.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/nvfp4.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

/// What the hand-back fragment forms (`sink::hand_back`) return to one lane: whole blocks of the
/// warp's 16-row tile for the caller's own store (an EVT node, a TMA store, another layout), and
/// the lane's partials of the output amax. `block[half][slot]` is block `block_of(lane, slot)`
/// (the tile's block column, -1: the lane holds none there) of tile row `row(lane, half)`.
template <class Format, int Tiles>
struct mma_quantized_blocks {
  /// Blocks per row of the tile: Tiles / 4 (NVFP4), Tiles / 8 (MXFP4).
  static constexpr int blocks = Tiles / (Format::block_size / 4);
  /// Slots per row half: NVFP4 blocks come four at a time (one per lane), MXFP4 ones one at a time (lane t = 0).
  static constexpr int slots = detail::is_nvfp4<Format> ? cuda::ceil_div(blocks, 4) : blocks;
  /// The lane's blocks: packed words in the standard order and the scale byte.
  quantized_block<Format> block[2][slots];
  /// max |h| over the lane's own values of block b of row half `half` (NaN ignored), for every b:
  /// the output amax's partials (lane-local; the lane stores other lanes' blocks).
  float lane_amax[2][blocks];
  /// Tile row (0..15) of the lane's blocks of row half `half` (0, 1).
  /// \code
  /// static_assert(fp4fuse::mma_quantized_blocks<fp4fuse::format::nvfp4<>, 8>::row(5, 1) == 9);  // lane 5, second half: row 1 + 8
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int row(int lane, int half) { return lane / 4 + 8 * half; }
  /// The tile's block column held in `slot` by `lane`, or -1.
  /// \code
  /// using Q = fp4fuse::mma_quantized_blocks<fp4fuse::format::nvfp4<>, 8>;  // 8 n8 tiles: 2 NVFP4 blocks a row
  /// static_assert(Q::block_of(5, 0) == 1 && Q::block_of(6, 0) == -1);     // lanes t = 0, 1 of each quad hold them
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int block_of(int lane, int slot) {
    const int t = lane % 4;
    if constexpr (detail::is_nvfp4<Format>) {
      return blocks - 4 * slot == 1 ? (t == 0 ? 4 * slot : -1) : (4 * slot + t < blocks ? 4 * slot + t : -1);
    } else {
      return t == 0 ? slot : -1;
    }
  }
  /// The lane's partial of the output amax over the tile's part inside the matrix: its values of
  /// tile rows < `rows_left` and blocks < `blocks_left` (M - the tile's first row, scale_cols - its
  /// first block column), NaN ignored, +0 for none; for `combine_output_amax`.
  /// \code
  /// const fp4fuse::mma_quantized_blocks<fp4fuse::format::nvfp4<>, 8> q{};  // as mma_epilogue returns it for sink::hand_back
  /// const float partial = q.amax(threadIdx.x % 32, M - row0, out.layout.scale_cols);  // the tile at block column 0
  /// \endcode
  FP4FUSE_HOST_DEVICE float amax(int lane, cuda::std::int64_t rows_left, cuda::std::int64_t blocks_left) const {
    float a = 0.0f;
    FP4FUSE_UNROLL
    for (int half = 0; half < 2; ++half) {
      FP4FUSE_UNROLL
      for (int b = 0; b < blocks; ++b) a = row(lane, half) < rows_left && b < blocks_left ? detail::max_num(a, lane_amax[half][b]) : a;
    }
    return a;
  }
};

/// Bytes of shared memory the staged sink needs per warp for `Tiles` n8 tiles (16 rows of 2 * Tiles
/// packed bytes, both formats); a warpgroup's wgmma form needs 4 times `mma_staging_bytes<Registers / 4>`.
template <int Tiles>
inline constexpr int mma_staging_bytes = 16 * 2 * Tiles;

namespace detail {

/// The largest magnitude of a lane's four activations of one NVFP4 block (NaN loses, as in
/// `block_codec<format::nvfp4<R>>::block_amax`).
FP4FUSE_DEVICE float amax_of_four(const float (&h)[4]) {
  return max_num(max_num(max_num(max_num(0.0f, abs_float(h[0])), abs_float(h[1])), abs_float(h[2])), abs_float(h[3]));
}

/// True for scale layouts whose offset splits as `row_offset(row) + col_offset(col)` (both
/// fp4fuse layouts): the epilogue then computes the row part once per row.
template <class Layout, class = void>
inline constexpr bool has_split_offset = false;
template <class Layout>
inline constexpr bool has_split_offset<Layout, cuda::std::void_t<decltype(cuda::std::declval<const Layout&>().row_offset(0)),
                                                                 decltype(cuda::std::declval<const Layout&>().col_offset(0))>> = true;

/// Quad-collective (the 4 lanes t = lane % 4 of an mma row): lane t holds partial maxima a[j] of
/// blocks j = 0..3; returns max over the quad of a[t] (block t's amax) in lane t. Reduce-scatter:
/// 3 shuffles instead of the 8 of four all-reductions. NaN loses, as in the NVFP4 codec's `block_amax`.
FP4FUSE_DEVICE float quad_reduce_scatter_max(const float (&a)[4], int t) {
  const bool upper = (t & 2) != 0;  // lanes 2, 3 keep blocks 2, 3
  const float send0 = upper ? a[0] : a[2], send1 = upper ? a[1] : a[3];
  const float pair0 = max_num(upper ? a[2] : a[0], __shfl_xor_sync(0xFFFFFFFFu, send0, 2));
  const float pair1 = max_num(upper ? a[3] : a[1], __shfl_xor_sync(0xFFFFFFFFu, send1, 2));
  const bool odd = (t & 1) != 0;  // odd lanes keep the odd block of the pair
  return max_num(odd ? pair1 : pair0, __shfl_xor_sync(0xFFFFFFFFu, odd ? pair0 : pair1, 1));
}

/// Quad-collective all-gather, the counterpart of the reduce-scatter above: lane t holds v (block
/// t's value); every lane gets all 4.
FP4FUSE_DEVICE void quad_all_gather(float v, int t, float (&all)[4]) {
  const float partner = __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  const bool odd = (t & 1) != 0;
  const float even_block = odd ? partner : v, odd_block = odd ? v : partner;  // blocks 2p, 2p + 1
  const float other_even = __shfl_xor_sync(0xFFFFFFFFu, even_block, 2);
  const float other_odd = __shfl_xor_sync(0xFFFFFFFFu, odd_block, 2);
  const bool upper = (t & 2) != 0;
  all[0] = upper ? other_even : even_block;
  all[1] = upper ? other_odd : odd_block;
  all[2] = upper ? even_block : other_even;
  all[3] = upper ? odd_block : other_odd;
}

/// Quad-collective transpose of packed bytes: lane t holds, for blocks j = 0..3, bytes t and 4 + t
/// of block j in the low and high byte of w[j]; returns in lane t block t's 8 bytes in order
/// (byte i of the result from lane i % 4). Two shuffles and four byte permutations.
FP4FUSE_DEVICE uint2 quad_transpose_bytes(const cuda::std::uint32_t (&w)[4], int t) {
  const cuda::std::uint32_t blocks01 = w[0] | (w[1] << 16), blocks23 = w[2] | (w[3] << 16);
  const bool upper = (t & 2) != 0;
  // After this exchange lane t holds its own and lane t ^ 2's halves of blocks 2p, 2p + 1.
  const cuda::std::uint32_t mine = upper ? blocks23 : blocks01;
  const cuda::std::uint32_t theirs = __shfl_xor_sync(0xFFFFFFFFu, upper ? blocks01 : blocks23, 2);
  // Keep block t's halves (own, lane t ^ 2's), send the pair's other block to lane t ^ 1.
  const bool odd = (t & 1) != 0;
  const cuda::std::uint32_t keep = __byte_perm(mine, theirs, odd ? 0x7632u : 0x5410u);
  const cuda::std::uint32_t got = __shfl_xor_sync(0xFFFFFFFFu, __byte_perm(mine, theirs, odd ? 0x5410u : 0x7632u), 1);
  // keep = [lane t: lo, hi | lane t^2: lo, hi], got = [lane t^1 | lane t^3]: order bytes by lane.
  // Lane t's PRMT selector (0x6240, 0x2604, 0x4062, 0x0426 for t = 0..3), shifted out of one
  // 64-bit constant: a table indexed by t would live in local memory (a store and a load per call).
  const auto selector = static_cast<cuda::std::uint32_t>((0x0426406226046240ull >> (16 * t)) & 0xFFFFu);
  return make_uint2(__byte_perm(keep, got, selector), __byte_perm(keep, got, selector + 0x1111u));
}

/// Quad-collective: lane t holds bytes t and 4 + t of one block in the low and high byte of w;
/// returns the block's 8 bytes in order in every lane. Two shuffles and three byte permutations.
FP4FUSE_DEVICE uint2 quad_gather_bytes(cuda::std::uint32_t w, int t) {
  // [byte 2p, byte 2p + 1, byte 4 + 2p, byte 5 + 2p] of the lane pair p = t / 2
  const cuda::std::uint32_t pair = __byte_perm(w, __shfl_xor_sync(0xFFFFFFFFu, w, 1), (t & 1) ? 0x1504u : 0x5140u);
  const cuda::std::uint32_t other = __shfl_xor_sync(0xFFFFFFFFu, pair, 2);
  const bool upper = (t & 2) != 0;
  return make_uint2(__byte_perm(pair, other, upper ? 0x1054u : 0x5410u), __byte_perm(pair, other, upper ? 0x3276u : 0x7632u));
}

/// One group of up to four NVFP4 blocks of one row half of the mma.sync form: lane t ends with
/// block 4 * group + t's 8 packed bytes (returned) and its scale (`own`); for a group of one block,
/// lane 0 holds it (every lane computes it). `lane_max[j]`: max |x| over the lane's own 4 values of
/// block 4 * group + j, NaN ignored (0 for absent blocks). Quad-collective (all 32 lanes, converged).
template <class Intermediate, int blocks, int Tiles, class Activation, class Format>
FP4FUSE_DEVICE uint2 nvfp4_quad_group(const float (&acc)[Tiles][4], int half, int group, int t, const Activation& act,
                                      const block_codec<Format>& codec, block_scale& own, float (&lane_max)[4]) {
  // The lane's four activations of blocks 4 * group + j: granule q (0, 1), register 2 * half + e.
  float h[4][4];
  float partial_amax[4];
  FP4FUSE_UNROLL
  for (int j = 0; j < 4; ++j) {
    const int block = 4 * group + j;
    FP4FUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      h[j][i] = 0.0f;  // blocks beyond the tile (a partial last group): never stored
    }
    if (block < blocks) {
      FP4FUSE_UNROLL
      for (int q = 0; q < 2; ++q) {
        FP4FUSE_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int gate_tile = 4 * block + 2 * q;
          h[j][2 * q + e] = Intermediate::round(act.apply(acc[gate_tile][2 * half + e], acc[gate_tile + 1][2 * half + e]));
        }
      }
    }
    partial_amax[j] = detail::amax_of_four(h[j]);
    lane_max[j] = partial_amax[j];
  }
  // Lane t ends with block 4 * group + t's 8 packed bytes and scale (lane 0 only, for a group of
  // one block). Nibbles: bytes t and 4 + t of a block, columns (2t, 2t+1) and (8+2t, 8+2t+1).
  uint2 bytes;
  if (blocks - 4 * group == 1) {  // known at compile time once the loop is unrolled
    // A lone block (16-column tiles): all-reduce the amax, every lane computes the scale, gather.
    float amax = detail::max_num(partial_amax[0], __shfl_xor_sync(0xFFFFFFFFu, partial_amax[0], 1));
    amax = detail::max_num(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 2));
    own = codec.scale_for(amax);
    const float scaled[4] = {h[0][0] * own.multiplier, h[0][1] * own.multiplier, h[0][2] * own.multiplier,
                             h[0][3] * own.multiplier};
    bytes = detail::quad_gather_bytes(e2m1x4_encode(scaled), t);
  } else {
    // Lane t computes block 4 * group + t's scale and shares its multiplier with the quad.
    own = codec.scale_for(detail::quad_reduce_scatter_max(partial_amax, t));
    float multiplier[4];
    detail::quad_all_gather(own.multiplier, t, multiplier);
    cuda::std::uint32_t nibbles[4];
    FP4FUSE_UNROLL
    for (int j = 0; j < 4; ++j) {
      const float scaled[4] = {h[j][0] * multiplier[j], h[j][1] * multiplier[j], h[j][2] * multiplier[j],
                               h[j][3] * multiplier[j]};
      nibbles[j] = 4 * group + j < blocks ? e2m1x4_encode(scaled) : 0u;  // no work for absent blocks
    }
    bytes = detail::quad_transpose_bytes(nibbles, t);
  }
  return bytes;
}

/// One MXFP4 block (32 output columns = 8 n8 tiles, `block`) of one row half of the mma.sync
/// form: each lane of a quad holds 8 of its 32 activations (columns 8q + 2t + e, q = 0..3); the
/// quad all-reduces the amax with the codec's `combine_amax` (NaN and Inf win, as `block_amax`),
/// every lane computes the scale and encodes its 8 values, and two byte gathers give every lane
/// the block's 16 bytes in order. `lane_max`: max |x| over the lane's own 8 values, NaN ignored.
/// Quad-collective.
template <class Intermediate, int Tiles, class Activation, class Format>
FP4FUSE_DEVICE uint4 mxfp4_quad_block(const float (&acc)[Tiles][4], int half, int block, int t, const Activation& act,
                                      const block_codec<Format>& codec, block_scale& own, float& lane_max) {
  float h[8];
  float partial = 0.0f;
  lane_max = 0.0f;
  FP4FUSE_UNROLL
  for (int q = 0; q < 4; ++q) {
    FP4FUSE_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int gate_tile = 8 * block + 2 * q;
      const float v = Intermediate::round(act.apply(acc[gate_tile][2 * half + e], acc[gate_tile + 1][2 * half + e]));
      h[2 * q + e] = v;
      partial = codec.combine_amax(partial, abs_float(v));  // the block's scale: NaN and Inf win
      lane_max = max_num(lane_max, abs_float(v));           // the output amax: NaN ignored
    }
  }
  float amax = codec.combine_amax(partial, __shfl_xor_sync(0xFFFFFFFFu, partial, 1));
  amax = codec.combine_amax(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 2));
  own = codec.scale_for(amax);
  // Nibbles of granules 0, 1 (bytes t, 4 + t) and of granules 2, 3 (bytes 8 + t, 12 + t).
  const float lo[4] = {h[0] * own.multiplier, h[1] * own.multiplier, h[2] * own.multiplier, h[3] * own.multiplier};
  const float hi[4] = {h[4] * own.multiplier, h[5] * own.multiplier, h[6] * own.multiplier, h[7] * own.multiplier};
  const uint2 first = quad_gather_bytes(e2m1x4_encode(lo), t), second = quad_gather_bytes(e2m1x4_encode(hi), t);
  return make_uint4(first.x, first.y, second.x, second.y);
}

}  // namespace detail

/// A warp's `mma.sync` m16n8 accumulator tiles with a per-column bias added, as the fragment
/// adapters add the description's bias before the activation (`mma_epilogue` and `wgmma_epilogue`
/// call it): register r of n8 tile n is gate/up column gate_up_col0 + 8n +
/// `mma_m16n8_f32_fragment::col(lane, r)` and gets `data[col]` added in fp32 where col < `count`,
/// +0 elsewhere (those columns are past the matrix when `count` is its gate/up width 2I, so no
/// adapter stores them; a partial bias, count < 2I, is the row form's). For `no_bias`, a copy.
/// Registers r and r + 1 are neighbouring columns, read as one 8-byte load: `column_bias::data`
/// 8-byte aligned, `count` and gate_up_col0 even. `lane`: the calling lane, as the fragment map
/// takes it (pass the value the caller's own stores use, so that their column arithmetic is
/// shared). For a kernel that stores the biased accumulators itself (the GEMM engine's BF16
/// epilogues). Per lane.
/// \code
/// __device__ void biased_tile(const float (&acc)[8][4], const float* d_bias, std::int64_t I, std::int64_t gate_up_col0) {
///   float biased[8][4];
///   fp4fuse::mma_add_bias(fp4fuse::column_bias{d_bias, 2 * I}, acc, biased, gate_up_col0, static_cast<int>(threadIdx.x % 32));
/// }
/// \endcode
template <class Bias, int Tiles>
FP4FUSE_DEVICE void mma_add_bias(const Bias& bias, const float (&acc)[Tiles][4], float (&biased)[Tiles][4], cuda::std::int64_t gate_up_col0,
                                 int lane) {
  static_assert(cuda::std::is_same_v<Bias, no_bias> || cuda::std::is_same_v<Bias, column_bias>, "mma_add_bias: Bias must be no_bias or column_bias");
  if constexpr (cuda::std::is_same_v<Bias, column_bias>) {
    FP4FUSE_UNROLL
    for (int n = 0; n < Tiles; ++n) {
      // With count and the column even, a pair is wholly below count or wholly past it.
      const cuda::std::int64_t col = gate_up_col0 + 8 * n + mma_m16n8_f32_fragment::col(lane, 0);
      const float2 b = col < bias.count ? *reinterpret_cast<const float2*>(bias.data + col) : make_float2(0.0f, 0.0f);
      biased[n][0] = acc[n][0] + b.x;
      biased[n][1] = acc[n][1] + b.y;
      biased[n][2] = acc[n][2] + b.x;
      biased[n][3] = acc[n][3] + b.y;
    }
  } else {
    FP4FUSE_UNROLL
    for (int n = 0; n < Tiles; ++n) {
      FP4FUSE_UNROLL
      for (int r = 0; r < 4; ++r) {
        biased[n][r] = acc[n][r];
      }
    }
  }
}

namespace detail {

/// The fragment epilogue's work with the stores: direct (`stage == nullptr`, Staged false) or the
/// packed bytes of rows inside the matrix to `stage` (16 rows of blocks * block_bytes, Staged) and
/// bulk copies by lane t = 0 of each quad. Returns the lane's amax partial over its values inside the matrix.
template <class Intermediate, bool Staged, int Tiles, class Activation, class Format, class Layout>
FP4FUSE_DEVICE float mma_store(const float (&acc)[Tiles][4], tile_origin origin, const Activation& act, const block_codec<Format>& codec,
                               const quantized_matrix<Format, Layout>& out, cuda::std::uint8_t* stage) {
  using frag = mma_m16n8_f32_fragment;
  constexpr int blocks = Tiles / (Format::block_size / 4);
  constexpr int block_bytes = Format::block_size / 2;
  constexpr int row_bytes = blocks * block_bytes;
  const int lane = static_cast<int>(cuda::ptx::get_sreg_laneid());  // any block shape
  const int t = lane % 4;
  const cuda::std::int64_t row0 = origin.row;
  const cuda::std::int64_t first_block_col = origin.gate_up_col / (2 * Format::block_size);  // 32 (NVFP4) gate/up columns per block
  // Staged: the blocks inside the matrix's columns go by bulk copy in whole 16-byte units, an odd
  // last NVFP4 block (8 bytes) directly. The same count for every row of the tile.
  int bulk = 0;
  if constexpr (Staged) {
    const cuda::std::int64_t left = out.layout.scale_cols - first_block_col;
    const int valid = left <= 0 ? 0 : (left < blocks ? static_cast<int>(left) : blocks);
    bulk = (valid * block_bytes) & ~15;
  }
  float lane_amax = 0.0f;  // the output amax's partial (unused by a caller: no instructions)
  FP4FUSE_UNROLL
  for (int half = 0; half < 2; ++half) {
    const cuda::std::int64_t row = row0 + frag::row(lane, 2 * half);
    const bool row_inside = row < out.rows();
    const bool row_in_scales = row < out.layout.padded_rows();
    const cuda::std::int64_t packed_row = row * out.ld_packed + first_block_col * block_bytes;
    cuda::std::uint8_t* const stage_row = Staged ? stage + frag::row(lane, 2 * half) * row_bytes : nullptr;
    const cuda::std::int64_t scale_row = [&] {
      if constexpr (detail::has_split_offset<Layout>) {
        return out.layout.row_offset(row);
      } else {
        return cuda::std::int64_t{0};
      }
    }();
    if constexpr (!detail::is_nvfp4<Format>) {
      // MXFP4: one 32-block at a time, lane t = 0 of the quad stores it (16 bytes) and its scale.
      FP4FUSE_UNROLL
      for (int block = 0; block < blocks; ++block) {
        block_scale own;
        float lane_max;
        const uint4 bytes = detail::mxfp4_quad_block<Intermediate>(acc, half, block, t, act, codec, own, lane_max);
        const cuda::std::int64_t block_col = first_block_col + block;
        const bool inside = row_inside && block_col < out.layout.scale_cols;
        if (inside) lane_amax = detail::max_num(lane_amax, lane_max);
        if constexpr (Staged) {
          if (t == 0 && inside) *reinterpret_cast<uint4*>(stage_row + block_bytes * block) = bytes;
        } else {
          if (t == 0 && inside) *reinterpret_cast<uint4*>(out.packed + packed_row + block_bytes * block) = bytes;
        }
        if (t == 0 && row_in_scales && block_col < out.layout.padded_cols()) {
          const cuda::std::int64_t scale_offset = [&] {
            if constexpr (detail::has_split_offset<Layout>) {
              return scale_row + out.layout.col_offset(block_col);
            } else {
              return out.layout.offset(row, block_col);
            }
          }();
          out.scales[scale_offset] = inside ? own.code : cuda::std::uint8_t{0};
        }
      }
    } else {
      FP4FUSE_UNROLL
      for (int group = 0; group < cuda::ceil_div(blocks, 4); ++group) {
        // Lane t ends with block 4 * group + t's 8 packed bytes and scale (lane 0 only, for a group of one block).
        block_scale own;
        float lane_max[4];
        const uint2 bytes = detail::nvfp4_quad_group<Intermediate, blocks>(acc, half, group, t, act, codec, own, lane_max);
        FP4FUSE_UNROLL
        for (int j = 0; j < 4; ++j) {
          if (4 * group + j < blocks && row_inside && first_block_col + 4 * group + j < out.layout.scale_cols) {
            lane_amax = detail::max_num(lane_amax, lane_max[j]);
          }
        }
        const int block = 4 * group + t;
        const cuda::std::int64_t block_col = first_block_col + block;
        const bool inside = row_inside && block_col < out.layout.scale_cols;
        if (block < blocks && inside) {
          if constexpr (Staged) {
            if (8 * block < bulk) {
              *reinterpret_cast<uint2*>(stage_row + 8 * block) = bytes;
            } else {
              *reinterpret_cast<uint2*>(out.packed + packed_row + 8 * block) = bytes;  // the odd last block
            }
          } else {
            *reinterpret_cast<uint2*>(out.packed + packed_row + 8 * block) = bytes;
          }
        }
        // Scale padding that falls in this tile is written as 0x00, so a grid whose tiles cover the
        // padded extent leaves no byte of the scale tensor unwritten.
        if (block < blocks && row_in_scales && block_col < out.layout.padded_cols()) {
          cuda::std::int64_t scale_offset;
          if constexpr (detail::has_split_offset<Layout>) {
            scale_offset = scale_row + out.layout.col_offset(block_col);
          } else {
            scale_offset = out.layout.offset(row, block_col);
          }
          out.scales[scale_offset] = inside ? own.code : cuda::std::uint8_t{0};
        }
      }
    }
  }
  if constexpr (Staged) {
    // Every lane's staged bytes visible to the async proxy, then lane t = 0 of each quad copies its two rows.
    detail::bulk_store_fence();
    __syncwarp();
    if (t == 0 && bulk > 0) {
      FP4FUSE_UNROLL
      for (int half = 0; half < 2; ++half) {
        const cuda::std::int64_t row = row0 + frag::row(lane, 2 * half);
        if (row < out.rows()) {
          detail::bulk_store(out.packed + row * out.ld_packed + first_block_col * block_bytes, stage + frag::row(lane, 2 * half) * row_bytes,
                             static_cast<cuda::std::uint32_t>(bulk));
        }
      }
      detail::bulk_store_commit();
    }
  }
  return lane_amax;
}

/// The hand-back fragment epilogue: the blocks each lane ends with, and its amax partials.
template <class Intermediate, int Tiles, class Activation, class Format>
FP4FUSE_DEVICE mma_quantized_blocks<Format, Tiles> mma_hand_back(const float (&acc)[Tiles][4], const Activation& act, const block_codec<Format>& codec) {
  using result = mma_quantized_blocks<Format, Tiles>;
  const int t = static_cast<int>(cuda::ptx::get_sreg_laneid()) % 4;
  result q;
  FP4FUSE_UNROLL
  for (int half = 0; half < 2; ++half) {
    FP4FUSE_UNROLL
    for (int slot = 0; slot < result::slots; ++slot) {
      block_scale own;
      if constexpr (detail::is_nvfp4<Format>) {
        float lane_max[4];
        const uint2 bytes = detail::nvfp4_quad_group<Intermediate, result::blocks>(acc, half, slot, t, act, codec, own, lane_max);
        q.block[half][slot].packed[0] = bytes.x;
        q.block[half][slot].packed[1] = bytes.y;
        FP4FUSE_UNROLL
        for (int j = 0; j < 4; ++j) {
          if (4 * slot + j < result::blocks) q.lane_amax[half][4 * slot + j] = lane_max[j];
        }
      } else {
        const uint4 bytes = detail::mxfp4_quad_block<Intermediate>(acc, half, slot, t, act, codec, own, q.lane_amax[half][slot]);
        q.block[half][slot].packed[0] = bytes.x;
        q.block[half][slot].packed[1] = bytes.y;
        q.block[half][slot].packed[2] = bytes.z;
        q.block[half][slot].packed[3] = bytes.w;
      }
      q.block[half][slot].scale = own.code;
    }
  }
  return q;
}

/// The adapter on the (biased) accumulators.
template <class Op, int Tiles>
FP4FUSE_DEVICE auto mma_run(const Op& op, const float (&acc)[Tiles][4], tile_origin origin) {
  using Intermediate = typename Op::intermediate_type;
  using Sink = typename Op::sink_type;
  if constexpr (cuda::std::is_same_v<Sink, sink::hand_back>) {
    return mma_hand_back<Intermediate>(acc, op.act, op.codec);
  } else {
    constexpr bool staged = sink_traits<Sink>::staged;
    cuda::std::uint8_t* stage = nullptr;
    if constexpr (staged) stage = static_cast<cuda::std::uint8_t*>(op.sink.staging);
    const float lane_amax = mma_store<Intermediate, staged>(acc, origin, op.act, op.codec, op.sink.out, stage);
    if constexpr (cuda::std::is_same_v<typename Op::amax_type, output_amax::global>) {
      combine_output_amax(op.amax.amax, lane_amax);
    } else {
      (void)lane_amax;
    }
  }
}

}  // namespace detail

/// The fused epilogue on one warp's `mma.sync` m16n8 f32 accumulator tile: act(gate + b) * (up + b)
/// of every gate/up pair, quantized as the description `op` says and sent to its sink.
/// Warp-collective: all 32 lanes call it, converged, with the same `op` and `origin`.
///
/// \param op     the description (`fused_epilogue`): its GateUp must be `gate_up::interleaved<8>`
///               (the fragment then holds matching gate and up values in the same register of
///               neighbouring n8 tiles; two accumulators: `interleave_gate_up` first)
/// \param acc    the lane's fragments `acc[n][r]` as `mma_m16n8_f32_fragment` maps them; Tiles a
///               multiple of 4 (NVFP4) or 8 (MXFP4): 8 * Tiles gate/up columns = Tiles / 4 NVFP4
///               blocks (Tiles / 8 MXFP4 blocks) per row
/// \param origin the tile's first output row and first gate/up column (a multiple of 2 * block size: 32 NVFP4, 64 MXFP4)
/// \return `mma_quantized_blocks<Format, Tiles>` for `sink::hand_back` (nothing written; bounds,
///         padding and amax are the caller's), else nothing.
/// Direct and staged sinks: packed bytes of rows >= out.rows() or blocks >= out.layout.scale_cols
/// are not written. Scale entries in the layout's padding (rows < padded_rows(), blocks <
/// padded_cols()) that this tile covers are written as 0x00: tiles covering
/// `scale_layout::padded_extent(out.layout)` (`scale_layout::tiles_to_cover`) write the whole scale
/// tensor; otherwise `write_scale_padding_beyond_grid` (epilogue/scale_padding.cuh) writes the rest.
/// A layout needs `offset`, `padded_rows` and `padded_cols`; with `row_offset` and `col_offset` as
/// well (both fp4fuse layouts) the row's part of the offset is computed once per row. Staged:
/// `sink::staged::staging` holds `mma_staging_bytes<Tiles>` bytes, NVFP4 Tiles a multiple of 8.
/// Packed output: one 8-byte (NVFP4) or 16-byte (MXFP4) store per block, so `out.packed` and
/// `out.ld_packed` are multiples of 8 (NVFP4) or 16 (MXFP4).
/// Bias: added by `mma_add_bias` (`column_bias::data` 8-byte aligned, `count` even).
///
/// How: per row, the quad's four lanes take four blocks at a time; each lane reduces its block's
/// amax (a reduce-scatter), computes that block's scale, shares the multiplier, encodes its own 4
/// values of each block, and the quad transposes the packed bytes so that each lane stores one
/// whole block (8 bytes) and its scale byte. A lone block (Tiles = 4, or the last of 4k + 1) is
/// reduced in every lane instead, which takes fewer steps for one block. MXFP4 (32-blocks, 8 values
/// per lane): the quad all-reduces each block's amax with the codec's `combine_amax`, every lane
/// computes the scale and encodes its 8 values, two byte gathers give lane 0 the block's 16 bytes,
/// which it stores with the scale byte.
/// \code
/// __device__ void fused(const float (&acc)[8][4], std::int64_t row0, std::int64_t gate_up_col0, const float* d_S,
///                       const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   // acc: a warp's 16 x 64 gate/up tile, 8 mma.sync m16n8 accumulators
///   const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*d_S), fp4fuse::sink::direct{out}};
///   fp4fuse::mma_epilogue(op, acc, {row0, gate_up_col0});
/// }
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int Tiles>
FP4FUSE_DEVICE auto mma_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op, const float (&acc)[Tiles][4],
                                 tile_origin origin) {
  static_assert(cuda::std::is_same_v<GateUp, gate_up::interleaved<8>>,
                "mma_epilogue: the fragment form needs gate and up interleaved by 8 (gate_up::interleaved<8>; two accumulators: interleave_gate_up first)");
  static_assert(Tiles % (Format::block_size / 4) == 0,
                "mma_epilogue: Tiles must be a multiple of 4 for NVFP4 (16 output columns per block), of 8 for MXFP4 (32)");
  static_assert(!(detail::sink_traits<Sink>::staged && detail::is_nvfp4<Format> && Tiles % 8 != 0),
                "mma_epilogue: sink::staged copies 16-byte rows: NVFP4 needs Tiles a multiple of 8 (2 blocks per row)");
  if constexpr (cuda::std::is_same_v<Bias, column_bias>) {
    float biased[Tiles][4];
    mma_add_bias(op.bias, acc, biased, origin.gate_up_col, static_cast<int>(cuda::ptx::get_sreg_laneid()));
    return detail::mma_run(op, biased, origin);
  } else {
    return detail::mma_run(op, acc, origin);
  }
}

/// The fused epilogue on one thread's `wgmma` m64nNk16 f32 fragment (`wgmma_m64nN_f32_fragment<N>`,
/// N = 2 * Registers, a multiple of 32). Warpgroup-collective: all 128 threads call it with the same
/// `op` and `origin`; each warp handles its 16 rows through `mma_epilogue`, so numerics, bounds,
/// padding, bias and amax are exactly those of that function.
/// \param op     the description, as `mma_epilogue`; a staged sink's `staging` is the warpgroup's
///               4 * `mma_staging_bytes<Registers / 4>` bytes (warp w uses the w-th quarter)
/// \param acc    the thread's `Registers` accumulators d[0..Registers-1], in wgmma order
/// \param origin the warpgroup tile's first output row and first gate/up column
/// \return for `sink::hand_back`, the calling warp's `mma_quantized_blocks<Format, Registers / 4>`
///         (its tile rows start at 16 * `wgmma_m64nN_f32_fragment<N>::warp_in_warpgroup()`), else nothing.
/// Preconditions: as `mma_epilogue`; warpgroups aligned to 4 warps of the block's linear thread index.
/// \code
/// __device__ void fused(const float (&acc)[128], std::int64_t m0, std::int64_t n0, const float* d_S, float* d_amax,
///                       const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   // acc: one thread's wgmma m64n256k16 accumulators (64 x 256 gate/up = 128 outputs per row)
///   const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*d_S), fp4fuse::sink::direct{out},
///                                    fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{}, fp4fuse::no_bias{},
///                                    fp4fuse::output_amax::global{d_amax}};
///   fp4fuse::wgmma_epilogue(op, acc, {m0, n0});
/// }
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int Registers>
FP4FUSE_DEVICE auto wgmma_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op,
                                   const float (&acc)[Registers], tile_origin origin) {
  static_assert(Registers % 16 == 0, "wgmma_epilogue: N = 2 * Registers must be a multiple of 32");
  using frag = wgmma_m64nN_f32_fragment<2 * Registers>;
  const int warp = frag::warp_in_warpgroup();
  const tile_origin warp_origin{origin.row + 16 * warp, origin.gate_up_col};
  if constexpr (detail::sink_traits<Sink>::staged) {
    auto warp_op = op;
    warp_op.sink.staging = static_cast<cuda::std::uint8_t*>(op.sink.staging) + warp * mma_staging_bytes<Registers / 4>;
    return mma_epilogue(warp_op, frag::warp_tiles(acc), warp_origin);
  } else {
    return mma_epilogue(op, frag::warp_tiles(acc), warp_origin);
  }
}

/// Gate and up from two accumulators (`gate_up::separate`: a GEMM with two B operands, or the two
/// halves of a split one) as the one `gate_up::interleaved<8>` accumulator the fragment forms take:
/// n8 tile k of `gate` becomes tile 2k of `acc`, of `up` tile 2k + 1. Output column c of the
/// accumulators (c0 + c, c0 their first output column) is then the gate/up pair of the result's
/// tile, whose `tile_origin` is {row, 2 * c0}; a `column_bias` then is in the interleaved order.
/// A renaming of registers, no arithmetic. Per lane, host and device.
/// \code
/// __device__ void two_b_operands(const float (&gate)[4][4], const float (&up)[4][4], std::int64_t row0, std::int64_t c0,
///                                const fp4fuse::block_codec<fp4fuse::format::nvfp4<>>& codec,
///                                const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   float acc[8][4];  // 32 output columns of gate and of up: 64 gate/up columns, 2 NVFP4 blocks per row
///   fp4fuse::interleave_gate_up(gate, up, acc);
///   fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{codec, fp4fuse::sink::direct{out}}, acc, {row0, 2 * c0});
/// }
/// \endcode
template <int Tiles>
FP4FUSE_HOST_DEVICE void interleave_gate_up(const float (&gate)[Tiles][4], const float (&up)[Tiles][4], float (&acc)[2 * Tiles][4]) {
  FP4FUSE_UNROLL
  for (int k = 0; k < Tiles; ++k) {
    FP4FUSE_UNROLL
    for (int r = 0; r < 4; ++r) {
      acc[2 * k][r] = gate[k][r];
      acc[2 * k + 1][r] = up[k][r];
    }
  }
}

/// The same for one thread's two `wgmma` m64nNk16 fragments of N columns each (`Registers` = N / 2):
/// the result is the thread's fragment of a 2N-column tile (`wgmma_m64nN_f32_fragment<2N>`) that
/// `wgmma_epilogue` takes, register 8k + j (j < 4) gate register 4k + j and register 8k + 4 + j up
/// register 4k + j.
/// \code
/// __device__ void two_wgmma(const float (&gate)[64], const float (&up)[64], std::int64_t m0, std::int64_t c0,
///                           const fp4fuse::block_codec<fp4fuse::format::mxfp4<>>& codec,
///                           const fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   float acc[128];  // gate and up of m64n128k16 each: 128 output columns, 4 MXFP4 blocks per row
///   fp4fuse::interleave_gate_up(gate, up, acc);
///   fp4fuse::wgmma_epilogue(fp4fuse::fused_epilogue{codec, fp4fuse::sink::direct{out}}, acc, {m0, 2 * c0});
/// }
/// \endcode
template <int Registers>
FP4FUSE_HOST_DEVICE void interleave_gate_up(const float (&gate)[Registers], const float (&up)[Registers], float (&acc)[2 * Registers]) {
  static_assert(Registers % 4 == 0, "interleave_gate_up: a wgmma fragment has 4 registers per n8 tile");
  FP4FUSE_UNROLL
  for (int i = 0; i < Registers; ++i) {
    acc[8 * (i / 4) + i % 4] = gate[i];
    acc[8 * (i / 4) + 4 + i % 4] = up[i];
  }
}

}  // namespace fp4fuse
