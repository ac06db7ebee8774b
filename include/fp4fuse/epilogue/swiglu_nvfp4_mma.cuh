#pragma once
/// \file epilogue/swiglu_nvfp4_mma.cuh
/// A GEMM epilogue step: a warp's `mma.sync` m16n8 f32 accumulators, whose columns are gate/up
/// interleaved in granules of 8, go through the gated activation and out as packed E2M1 plus E4M3
/// block scales, straight from registers (no BF16 tensor, no shared memory).
///
/// Per row, 16 output columns form one NVFP4 block: 2 granules = 4 n8 tiles (gate, up, gate, up).
/// Each lane holds 4 of the block's 16 activations (columns 2t, 2t+1, 8+2t, 8+2t+1 for
/// t = lane % 4); the four lanes of a quad reduce the block amax with two shuffles, quantize
/// their own values and assemble the block's 8 bytes with two more shuffle rounds. Numerics are
/// exactly `block_codec<format::nvfp4<Recipe>>` on the block's activations: bit-identical to
/// `swiglu_quantize` on the same fp32 gate/up values (tests/epilogue/swiglu_nvfp4_mma.cu).
#include <cuda/ptx>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/epilogue/mma_fragment.cuh"
#include "fp4fuse/epilogue/wgmma_fragment.cuh"
#include "fp4fuse/kernels/swiglu_quantize.cuh"
#include "fp4fuse/nvfp4.cuh"

namespace fp4fuse {

/// Where the epilogue writes: the packed [rows, cols / 2] E2M1 output, its scales, and the
/// logical extent used for bounds checks (`cols` is I, the SwiGLU output width).
template <class Layout>
struct nvfp4_epilogue_output {
  cuda::std::uint8_t* packed;      ///< [rows, ld_packed] bytes; 8-byte aligned rows
  cuda::std::int64_t ld_packed;    ///< bytes between rows, a multiple of 8
  cuda::std::uint8_t* scales;      ///< the scale tensor of `layout`
  Layout layout;                   ///< scale layout built for {rows, cols / 16}
  cuda::std::int64_t rows;         ///< M: rows at or beyond it are not written
  cuda::std::int64_t cols;         ///< I, a multiple of 16: blocks at or beyond cols / 16 are not written
};

/// Applies act(gate) * up to one warp's accumulator tile and writes it as NVFP4. Warp-collective:
/// all 32 lanes must call it with the same arguments (except `acc`).
///
/// \tparam Tiles number of n8 accumulator tiles, a multiple of 4: the tile covers 8 * Tiles
///         interleaved gate/up columns = 4 * Tiles output columns = Tiles / 4 NVFP4 blocks.
/// \param acc   the lane's fragments, `acc[n][r]` as `mma_m16n8_f32_fragment` maps them
/// \param row0  output row of the tile's row 0
/// \param col0  output (SwiGLU) column of the tile's first granule, a multiple of 16
/// \param act   the gated activation (`activation::silu`, `swiglu_clamped`, `gelu_tanh`)
/// \param quantizer the recipe's quantizer built from the global encode scale
/// \param out   destination tensors and their logical extent
/// Preconditions: gate/up interleaved by 8 (`gate_up::interleaved<8>`), col0 % 16 == 0.
/// Packed bytes of rows >= out.rows or blocks >= out.cols / 16 are not written. Scale entries in
/// the layout's padding (rows < padded_rows(), blocks < padded_cols()) that this tile covers are
/// written as 0x00: tiles covering round_up(rows, 128) x round_up(cols, 64) (swizzled layout)
/// write the whole scale tensor, padding included.
/// \code
/// float acc[8][4];  // 16 x 64 gate/up tile from mma.sync
/// fp4fuse::swiglu_nvfp4_mma_epilogue(acc, fp4fuse::activation::silu{}, q, row0, col0, out);
/// \endcode
template <class Intermediate = intermediate::fp32, int Tiles, class Activation, class Recipe, class Layout>
FP4FUSE_DEVICE void swiglu_nvfp4_mma_epilogue(const float (&acc)[Tiles][4], const Activation& act,
                                              const nvfp4_quantizer<Recipe>& quantizer, cuda::std::int64_t row0,
                                              cuda::std::int64_t col0, const nvfp4_epilogue_output<Layout>& out) {
  static_assert(Tiles % 4 == 0, "swiglu_nvfp4_mma_epilogue: Tiles must be a multiple of 4 (16 output columns per block)");
  using frag = mma_m16n8_f32_fragment;
  const int lane = static_cast<int>(cuda::ptx::get_sreg_laneid());  // any block shape
  const int t = lane % 4;
  FP4FUSE_UNROLL
  for (int half = 0; half < 2; ++half) {
    const cuda::std::int64_t row = row0 + frag::row(lane, 2 * half);
    FP4FUSE_UNROLL
    for (int block = 0; block < Tiles / 4; ++block) {
      // The lane's four activations of this block: granule q (0, 1), register 2 * half + e (e = 0, 1).
      float h[4];
      FP4FUSE_UNROLL
      for (int q = 0; q < 2; ++q) {
        FP4FUSE_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int gate_tile = 4 * block + 2 * q;
          float v = act.apply(acc[gate_tile][2 * half + e], acc[gate_tile + 1][2 * half + e]);
          if constexpr (cuda::std::is_same_v<Intermediate, intermediate::bf16>) {
            v = __bfloat162float(__float2bfloat16_rn(v));
          }
          h[2 * q + e] = v;
        }
      }
      // The lane's part of the block amax, then the quad's (NaN ignored, as the codec does).
      float amax = nvfp4_block_amax(h);
      amax = detail::max_num(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 1));
      amax = detail::max_num(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 2));
      const nvfp4_block_scale s = quantizer.block_scale(amax);
      // Bytes t and 4 + t of the block's 8: columns (2t, 2t+1) and (8+2t, 8+2t+1).
      cuda::std::uint32_t lo = static_cast<cuda::std::uint32_t>(e2m1x2_encode(h[0] * s.multiplier, h[1] * s.multiplier)) << (8 * t);
      cuda::std::uint32_t hi = static_cast<cuda::std::uint32_t>(e2m1x2_encode(h[2] * s.multiplier, h[3] * s.multiplier)) << (8 * t);
      lo |= __shfl_xor_sync(0xFFFFFFFFu, lo, 1);
      hi |= __shfl_xor_sync(0xFFFFFFFFu, hi, 1);
      lo |= __shfl_xor_sync(0xFFFFFFFFu, lo, 2);
      hi |= __shfl_xor_sync(0xFFFFFFFFu, hi, 2);
      const cuda::std::int64_t block_col = col0 / 16 + block;
      const bool inside = row < out.rows && block_col < out.cols / 16;
      if (inside && t == 0) {
        *reinterpret_cast<uint2*>(out.packed + row * out.ld_packed + block_col * 8) = make_uint2(lo, hi);
      }
      // Scale padding that falls in this tile is written as 0x00, so a grid whose tiles cover the
      // padded extent leaves no byte of the scale tensor unwritten.
      if (t == 1 && row < out.layout.padded_rows() && block_col < out.layout.padded_cols()) {
        out.scales[out.layout.offset(row, block_col)] = inside ? s.code : cuda::std::uint8_t{0};
      }
    }
  }
}

/// The same epilogue for one thread's `wgmma` m64nNk16 f32 fragment (`wgmma_m64nN_f32_fragment<N>`,
/// N = 2 * Registers). Warpgroup-collective: all 128 threads call it with the same arguments
/// (except `acc`); each warp handles its 16 rows through `swiglu_nvfp4_mma_epilogue`, so the
/// numerics, bounds checks and scale padding are exactly those of that function.
///
/// \param acc   the thread's `Registers` accumulators d[0..Registers-1], in wgmma order
/// \param act   the gated activation
/// \param quantizer the recipe's quantizer built from the global encode scale
/// \param row0  output row of the warpgroup tile's row 0
/// \param col0  output (SwiGLU) column of the tile's first granule, a multiple of 16
/// \param out   destination tensors and their logical extent
/// Preconditions: as `swiglu_nvfp4_mma_epilogue`; N a multiple of 32; warpgroups aligned to 4
/// warps of the block's linear thread index.
/// \code
/// float acc[128];  // wgmma m64n256k16: 64 rows x 256 gate/up columns = 128 SwiGLU columns
/// fp4fuse::swiglu_nvfp4_wgmma_epilogue(acc, fp4fuse::activation::silu{}, q, m0, n0 / 2, out);
/// \endcode
template <class Intermediate = intermediate::fp32, int Registers, class Activation, class Recipe, class Layout>
FP4FUSE_DEVICE void swiglu_nvfp4_wgmma_epilogue(const float (&acc)[Registers], const Activation& act,
                                                const nvfp4_quantizer<Recipe>& quantizer, cuda::std::int64_t row0,
                                                cuda::std::int64_t col0, const nvfp4_epilogue_output<Layout>& out) {
  static_assert(Registers % 16 == 0, "swiglu_nvfp4_wgmma_epilogue: N = 2 * Registers must be a multiple of 32");
  using frag = wgmma_m64nN_f32_fragment<2 * Registers>;
  swiglu_nvfp4_mma_epilogue<Intermediate>(frag::warp_tiles(acc), act, quantizer, row0 + 16 * frag::warp_in_warpgroup(),
                                          col0, out);
}

}  // namespace fp4fuse
