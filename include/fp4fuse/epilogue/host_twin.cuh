#pragma once
/// \file epilogue/host_twin.cuh
/// Host twins of the fused epilogue's adapters: one host function per adapter that takes every
/// lane's registers, as the adapter's fragment map lays them out, and writes the same bytes into a
/// host `quantized_matrix` as the device adapter does with the same `fused_epilogue`: packed bytes,
/// scale codes and 0x00 in the scale padding, with the same bounds, bias and output amax. A kernel
/// author checks their fragment bookkeeping on the CPU: fill `acc[lane]...` the way their GEMM
/// leaves the registers, run the twin, compare with `swiglu_quantize`'s bytes (or `block_codec` on
/// the activations). docs/EPILOGUE.md shows such a test.
///
/// `mma_epilogue_host` takes `acc[32][Tiles][4]` (`mma_m16n8_f32_fragment`), `wgmma_epilogue_host`
/// and `wgmma_swap_ab_epilogue_host` `acc[128][N / 2]` (`wgmma_m64nN_f32_fragment<N>`, the latter
/// with gate/up columns as its rows and tokens as its columns) and `row_epilogue_host` `acc[128][N]`
/// (`tcgen05_32x32b_fragment<N>`). The description's sink is `sink::direct` or `sink::staged` (the
/// staged sink writes the same bytes; the twins store directly) over host memory, its
/// `output_amax::global` a host float (+0 before the first call).
///
/// The quad collectives of the mma form are emulated lane by lane (a block's amax is the codec's
/// `combine_amax` of its four lanes' partial maxima, then each lane encodes its own values with the
/// block's multiplier; NVFP4 and MXFP4), the row form is its own host twin (`row_epilogue` is
/// `__host__ __device__`). Bit-identical to the device forms for te_exact and both MXFP4 recipes
/// with the exact activations; two exceptions: vllm's multiplier may differ by its `rcp.approx`
/// (nvfp4.cuh), and the fast activations (`swiglu_fast`, `swiglu_clamped_fast`) compute a
/// different activation on the host (`std::exp2` against `ex2.approx`, activation.cuh), so their
/// codes may differ wherever the activations do. Tests:
/// tests/epilogue/host_twin.cu (against the host block_codec), and on the GPU
/// tests/gemm/dense.cu (the example's fused kernels against the twin).
#include <cuda_bf16.h>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cstddef>
#include <vector>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/epilogue/mma_fragment.cuh"
#include "fp4fuse/epilogue/operation.cuh"
#include "fp4fuse/epilogue/output_amax.cuh"
#include "fp4fuse/epilogue/row.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/epilogue/wgmma_fragment.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

namespace detail {
template <class Sink>
inline constexpr bool host_twin_sink = sink_traits<Sink>::valid && !cuda::std::is_same_v<Sink, sink::hand_back>;
}  // namespace detail

/// Host twin of `mma_epilogue`: the warp's 32 lanes' accumulators, `acc[lane][n][r]` as
/// `mma_m16n8_f32_fragment` maps them, written to the sink's output (host memory) exactly as the
/// device adapter writes them, bias and output amax included. Same preconditions and bounds.
/// \code
/// static float acc[32][8][4];  // every lane's registers of one 16 x 64 gate/up tile
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 16}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 16}};
/// fp4fuse::mma_epilogue_host(fp4fuse::fused_epilogue{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::direct{host_out}},
///                            acc, {0, 0});
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int Tiles>
void mma_epilogue_host(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op, const float (&acc)[32][Tiles][4],
                       tile_origin origin) {
  static_assert(detail::host_twin_sink<Sink>, "mma_epilogue_host: the host twin writes its output: sink::direct or sink::staged (the same bytes)");
  static_assert(cuda::std::is_same_v<GateUp, gate_up::interleaved<8>>, "mma_epilogue_host: gate_up::interleaved<8>, as the device form");
  static_assert(Tiles % (Format::block_size / 4) == 0,
                "mma_epilogue_host: Tiles must be a multiple of 4 for NVFP4, of 8 for MXFP4, as the device form");
  using frag = mma_m16n8_f32_fragment;
  const auto& out = op.sink.out;
  const auto& codec = op.codec;
  constexpr int bs = Format::block_size;
  constexpr int per_lane = bs / 4;         // values of a block per lane: 4 (NVFP4), 8 (MXFP4)
  constexpr int tiles_per_block = bs / 4;  // n8 tiles per block: 2 * bs gate/up columns, 8 per tile
  const cuda::std::int64_t first_block_col = origin.gate_up_col / (2 * bs);
  float tile_amax = 0.0f;
  for (int half = 0; half < 2; ++half) {
    for (int block = 0; block < Tiles / tiles_per_block; ++block) {
      // Lane l's values of the block: granule q (of the block's bs / 8), element e: output column
      // 8q + 2t + e of the block, from gate tile tiles_per_block * block + 2q and the up tile after it.
      float h[32][8], partial[32];
      for (int lane = 0; lane < 32; ++lane) {
        partial[lane] = 0.0f;
        for (int q = 0; q < per_lane / 2; ++q)
          for (int e = 0; e < 2; ++e) {
            const int gate_tile = tiles_per_block * block + 2 * q, reg = 2 * half + e;
            const cuda::std::int64_t gate_col = origin.gate_up_col + 8 * gate_tile + frag::col(lane, reg);
            h[lane][2 * q + e] = op.activate(acc[lane][gate_tile][reg], acc[lane][gate_tile + 1][reg], gate_col, gate_col + 8);
            partial[lane] = codec.combine_amax(partial[lane], detail::abs_float(h[lane][2 * q + e]));
          }
      }
      for (int lane = 0; lane < 32; ++lane) {
        const int quad = lane & ~3, t = lane % 4;
        float amax = partial[quad];
        for (int j = 1; j < 4; ++j) amax = codec.combine_amax(amax, partial[quad + j]);  // the quad's shuffles
        const block_scale s = codec.scale_for(amax);
        const cuda::std::int64_t row = origin.row + frag::row(lane, 2 * half), block_col = first_block_col + block;
        const bool inside = row < out.rows() && block_col < out.layout.scale_cols;
        if (inside) {
          for (int i = 0; i < per_lane; ++i) tile_amax = detail::max_num(tile_amax, detail::abs_float(h[lane][i]));
          cuda::std::uint8_t* p = out.packed + row * out.ld_packed + block_col * (bs / 2);
          for (int q = 0; q < per_lane / 2; ++q) p[4 * q + t] = e2m1x2_encode(h[lane][2 * q] * s.multiplier, h[lane][2 * q + 1] * s.multiplier);
        }
        if (t == 0 && row < out.layout.padded_rows() && block_col < out.layout.padded_cols()) {
          out.scales[out.layout.offset(row, block_col)] = inside ? s.code : cuda::std::uint8_t{0};
        }
      }
    }
  }
  if constexpr (cuda::std::is_same_v<Amax, output_amax::global>) detail::combine_output_amax_host(op.amax.amax, tile_amax);
}

/// Host twin of `wgmma_epilogue`: the warpgroup's 128 threads' accumulators, `acc[thread][i]` as
/// `wgmma_m64nN_f32_fragment<2 * Registers>` maps them; warp w's rows go through
/// `mma_epilogue_host`, as on the device.
/// \code
/// static float acc[128][128];  // every thread's d0..d127 of one wgmma m64n256k16 tile, filled by
///                              // wgmma_m64nN_f32_fragment<256>::row(t, i) and col(t, i)
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 16}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 16}};
/// fp4fuse::wgmma_epilogue_host(fp4fuse::fused_epilogue{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::direct{host_out}},
///                              acc, {0, 0});
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int Registers>
void wgmma_epilogue_host(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op, const float (&acc)[128][Registers],
                         tile_origin origin) {
  static_assert(Registers % 16 == 0, "wgmma_epilogue_host: N = 2 * Registers must be a multiple of 32");
  for (int w = 0; w < 4; ++w) {
    float warp[32][Registers / 4][4];
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < Registers; ++i) warp[lane][i / 4][i % 4] = acc[32 * w + lane][i];
    mma_epilogue_host(op, warp, {origin.row + 16 * w, origin.gate_up_col});
  }
}

/// Host twin of `row_epilogue`: the warpgroup's 128 threads' accumulators, `acc[thread][r]` as
/// `tcgen05_32x32b_fragment<N>` maps them (thread t: row origin.row + t), written to the sink's
/// output (host memory), the output amax combined as `combine_output_amax` does.
/// \code
/// static float acc[128][64];  // every thread's tcgen05.ld 32x32b.x64 registers of one 128 x 64 slice
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 32}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 32}};
/// float host_amax = 0.0f;
/// fp4fuse::row_epilogue_host(fp4fuse::fused_epilogue{fp4fuse::block_codec<fp4fuse::format::mxfp4<>>(), fp4fuse::sink::direct{host_out},
///                                                    fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{}, fp4fuse::no_bias{},
///                                                    fp4fuse::output_amax::global{&host_amax}},
///                            acc, {0, 0});
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int N>
void row_epilogue_host(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op, const float (&acc)[128][N],
                       tile_origin origin) {
  static_assert(detail::host_twin_sink<Sink>, "row_epilogue_host: the host twin writes its output: sink::direct or sink::staged (the same bytes)");
  const auto quantize = detail::as_hand_back(op);
  for (int t = 0; t < 128; ++t) {
    const tile_origin mine{origin.row + t, origin.gate_up_col};
    const auto q = row_epilogue(quantize, acc[t], mine);
    detail::store_row<false>(op.sink.out, mine, q, nullptr);
    if constexpr (cuda::std::is_same_v<Amax, output_amax::global>) {
      detail::combine_output_amax_host(op.amax.amax, detail::row_amax_partial(op.sink.out, mine, q));
    }
  }
}

/// Host twin of `wgmma_swap_ab_epilogue` (epilogue/wgmma_swap_ab.cuh): the warpgroup's 128 threads'
/// swap-AB accumulators, `acc[thread][i]` as `wgmma_m64nN_f32_fragment<N>` maps them with the
/// fragment's rows as gate/up columns and its columns as tokens (N = 2 * Registers), written to
/// the sink's output (host memory) token row by token row as the device form writes them, the
/// output amax combined as `combine_output_amax` does. Same preconditions (`sink::direct`).
/// \code
/// static float acc[128][32];  // every thread's wgmma m64n64k16 registers: 64 gate/up columns x 64 tokens
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 16}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 16}};
/// fp4fuse::wgmma_swap_ab_epilogue_host(fp4fuse::fused_epilogue{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::direct{host_out}},
///                                      acc, {0, 0});
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int Registers>
void wgmma_swap_ab_epilogue_host(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op,
                                 const float (&acc)[128][Registers], tile_origin origin) {
  static_assert(detail::sink_traits<Sink>::stores && !detail::sink_traits<Sink>::staged,
                "wgmma_swap_ab_epilogue_host: sink::direct, as the device form");
  constexpr int tokens = 2 * Registers;
  using frag = wgmma_m64nN_f32_fragment<tokens>;
  std::vector<float> rows(static_cast<std::size_t>(tokens) * 64);  // up to 64 KiB: on the heap
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < Registers; ++i) rows[static_cast<std::size_t>(frag::col(t, i)) * 64 + frag::row(t, i)] = acc[t][i];
  for (int token = 0; token < tokens; ++token) {
    const float(&row)[64] = *reinterpret_cast<const float(*)[64]>(&rows[static_cast<std::size_t>(token) * 64]);
    row_epilogue(op, row, {origin.row + token, origin.gate_up_col});
  }
}

}  // namespace fp4fuse
