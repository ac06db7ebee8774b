#pragma once
/// \file epilogue/host_twin.cuh
/// Host twins of the fused epilogues: one host function per form that takes every lane's
/// registers, as the form's fragment map lays them out, and writes the same bytes into a host
/// `quantized_matrix` as the device form does: packed bytes, scale codes and 0x00 in the scale
/// padding, with the same bounds. A kernel author checks their fragment bookkeeping on the CPU:
/// fill `acc[lane]...` the way their GEMM leaves the registers, run the twin, compare with
/// `swiglu_quantize`'s bytes (or `block_codec` on the activations). docs/EPILOGUE.md shows such a test.
///
/// `swiglu_quantize_mma_epilogue_host` takes `acc[32][Tiles][4]` (`mma_m16n8_f32_fragment`),
/// `swiglu_quantize_wgmma_epilogue_host` `acc[128][N / 2]` (`wgmma_m64nN_f32_fragment<N>`) and
/// `swiglu_quantize_row_epilogue_host` `acc[128][N]` (`tcgen05_32x32b_fragment<N>`); docs/EPILOGUE.md
/// lists the device forms they mirror.
///
/// The quad collectives of the mma form are emulated lane by lane (a block's amax is the codec's
/// `combine_amax` of its four lanes' partial maxima, then each lane encodes its own values with the
/// block's multiplier; NVFP4 and MXFP4), the row form is its own host twin (`swiglu_quantize_row` and
/// `store_quantized_row` are `__host__ __device__`). Bit-identical to the device forms for every
/// recipe whose scale is (te_exact, MXFP4; vllm's multiplier may differ by its `rcp.approx`, see
/// nvfp4.cuh). Tests: tests/epilogue/host_twin.cu (against the host block_codec), and on the GPU
/// tests/gemm/dense.cu (the example's fused kernels against the twin).
#include <cuda_bf16.h>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/epilogue/mma_fragment.cuh"
#include "fp4fuse/epilogue/row.cuh"
#include "fp4fuse/epilogue/row_store.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/epilogue/wgmma_fragment.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

/// Host twin of `swiglu_quantize_mma_epilogue`: the warp's 32 lanes' accumulators, `acc[lane][n][r]`
/// as `mma_m16n8_f32_fragment` maps them, written to `out` (host memory) exactly as the device form
/// writes them. Same template parameters, preconditions and bounds as the device form. Returns the
/// maximum of the 32 lanes' amax partials (what `combine_output_amax` makes of the device form's
/// return values): max |act(gate) * up| over the tile's values inside the matrix, NaN ignored.
/// \code
/// static float acc[32][8][4];  // every lane's registers of one 16 x 64 gate/up tile
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 16}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 16}};
/// fp4fuse::swiglu_quantize_mma_epilogue_host<fp4fuse::gate_up::interleaved<8>>(
///     acc, {0, 0}, fp4fuse::activation::swiglu{}, fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), host_out);
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, int Tiles, class Activation, class CodecFormat, class Format, class Layout>
float swiglu_quantize_mma_epilogue_host(const float (&acc)[32][Tiles][4], tile_origin origin, const Activation& act,
                                        const block_codec<CodecFormat>& codec, const quantized_matrix<Format, Layout>& out) {
  static_assert(cuda::std::is_same_v<CodecFormat, Format>,
                "swiglu_quantize_mma_epilogue_host: the codec and the output must have the same format (format and recipe), e.g. block_codec<F> with quantized_matrix<F, L>");
  static_assert(cuda::std::is_same_v<GateUp, gate_up::interleaved<8>>, "swiglu_quantize_mma_epilogue_host: gate_up::interleaved<8>, as the device form");
  static_assert(Tiles % (Format::block_size / 4) == 0,
                "swiglu_quantize_mma_epilogue_host: Tiles must be a multiple of 4 for NVFP4, of 8 for MXFP4, as the device form");
  static_assert(!scale_layout::is_grouped<Layout>, "swiglu_quantize_mma_epilogue_host: a grouped layout is written per expert");
  using frag = mma_m16n8_f32_fragment;
  constexpr int bs = Format::block_size;
  constexpr int per_lane = bs / 4;      // values of a block per lane: 4 (NVFP4), 8 (MXFP4)
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
            const int gate_tile = tiles_per_block * block + 2 * q;
            h[lane][2 * q + e] = detail::activate_one<Intermediate>(act, acc[lane][gate_tile][2 * half + e], acc[lane][gate_tile + 1][2 * half + e]);
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
  return tile_amax;
}

/// Host twin of `swiglu_quantize_wgmma_epilogue`: the warpgroup's 128 threads' accumulators,
/// `acc[thread][i]` as `wgmma_m64nN_f32_fragment<2 * Registers>` maps them; warp w's rows go
/// through `swiglu_quantize_mma_epilogue_host`, as on the device; returns the maximum of the four
/// warps' amaxes.
/// \code
/// static float acc[128][128];  // every thread's d0..d127 of one wgmma m64n256k16 tile, filled by
///                              // wgmma_m64nN_f32_fragment<256>::row(t, i) and col(t, i)
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 16}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 16}};
/// fp4fuse::swiglu_quantize_wgmma_epilogue_host<fp4fuse::gate_up::interleaved<8>>(
///     acc, {0, 0}, fp4fuse::activation::swiglu{}, fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), host_out);
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, int Registers, class Activation, class CodecFormat, class Format, class Layout>
float swiglu_quantize_wgmma_epilogue_host(const float (&acc)[128][Registers], tile_origin origin, const Activation& act,
                                          const block_codec<CodecFormat>& codec, const quantized_matrix<Format, Layout>& out) {
  static_assert(cuda::std::is_same_v<CodecFormat, Format>,
                "swiglu_quantize_wgmma_epilogue_host: the codec and the output must have the same format (format and recipe), e.g. block_codec<F> with quantized_matrix<F, L>");
  static_assert(Registers % 16 == 0, "swiglu_quantize_wgmma_epilogue_host: N = 2 * Registers must be a multiple of 32");
  float amax = 0.0f;
  for (int w = 0; w < 4; ++w) {
    float warp[32][Registers / 4][4];
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < Registers; ++i) warp[lane][i / 4][i % 4] = acc[32 * w + lane][i];
    amax = detail::max_num(amax, swiglu_quantize_mma_epilogue_host<GateUp, Intermediate>(warp, {origin.row + 16 * w, origin.gate_up_col}, act,
                                                                                          codec, out));
  }
  return amax;
}

/// Host twin of `swiglu_quantize_row_epilogue`: the warpgroup's 128 threads' accumulators,
/// `acc[thread][r]` as `tcgen05_32x32b_fragment<N>` maps them (thread t: row origin.row + t), written
/// to `out` (host memory); with `extras.amax` (a host float, +0 before the first call) the output
/// amax is combined into `*extras.amax` as `combine_output_amax` does.
/// \code
/// static float acc[128][64];  // every thread's tcgen05.ld 32x32b.x64 registers of one 128 x 64 slice
/// static std::uint8_t p[M * I / 2], s[fp4fuse::scale_layout::swizzled_128x4{M, I / 32}.size_bytes()];
/// const fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4> host_out{p, I / 2, s, {M, I / 32}};
/// float host_amax = 0.0f;
/// fp4fuse::swiglu_quantize_row_epilogue_host<fp4fuse::gate_up::interleaved<8>>(
///     acc, {0, 0}, fp4fuse::activation::swiglu{}, fp4fuse::block_codec<fp4fuse::format::mxfp4<>>(), host_out, {{}, &host_amax});
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, int N, class Activation, class CodecFormat, class Format, class Layout>
void swiglu_quantize_row_epilogue_host(const float (&acc)[128][N], tile_origin origin, const Activation& act, const block_codec<CodecFormat>& codec,
                                       const quantized_matrix<Format, Layout>& out, const row_epilogue_extras& extras = {}) {
  static_assert(cuda::std::is_same_v<CodecFormat, Format>,
                "swiglu_quantize_row_epilogue_host: the codec and the output must have the same format (format and recipe), e.g. block_codec<F> with quantized_matrix<F, L>");
  constexpr int blocks = N / 2 / Format::block_size;
  for (int t = 0; t < 128; ++t) {
    const tile_origin mine{origin.row + t, origin.gate_up_col};
    const auto q = swiglu_quantize_row<GateUp, Intermediate>(acc[t], act, codec, extras.bias);
    store_quantized_row(out, mine, q);
    if (extras.amax != nullptr && mine.row < out.rows()) {
      const cuda::std::int64_t left = out.layout.scale_cols - origin.gate_up_col / (2 * Format::block_size);
      const float a = q.amax(left <= 0 ? 0 : (left < blocks ? static_cast<int>(left) : blocks));
      if (a > 0.0f && detail::float_bits(a) > detail::float_bits(*extras.amax)) *extras.amax = a;  // combine_output_amax's rule
    }
  }
}

}  // namespace fp4fuse
