#pragma once
/// \file epilogue/row.cuh
/// The row adapter of the fused epilogue (`fused_epilogue`, epilogue/operation.cuh): one thread
/// holds consecutive fp32 gate/up columns of one row (`tcgen05.ld` 32x32b,
/// `tcgen05_32x32b_fragment`; a gathered fragment; any row segment in registers) and quantizes
/// whole blocks by itself, with no data exchanged between threads: `row_epilogue(op, acc, origin)`.
///
/// Gate/up sources: `gate_up::interleaved<G>` (one accumulator of N = 2 * Out registers, any G
/// that divides Out) or `gate_up::separate` (two accumulators of Out registers). Formats: any
/// (`format::nvfp4<R>`: Out a multiple of 16; `format::mxfp4<R>`: a multiple of 32). Numerics are
/// exactly `block_codec<Format>::quantize` on each block's activations act(gate + b_g) * (up + b_u),
/// so bit-identical to the standalone `swiglu_quantize` on the same (biased) fp32 values
/// (tests/epilogue/row.cu). Sinks: direct (also on the host: the row form is its own host twin),
/// staged (one bulk copy per thread's segment), hand-back (`quantized_row`).
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/epilogue/bulk_store.cuh"
#include "fp4fuse/epilogue/operation.cuh"
#include "fp4fuse/epilogue/output_amax.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/mxfp4.cuh"
#include "fp4fuse/nvfp4.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

/// A thread's quantized row segment: `Blocks` blocks of `Format` as the hand-back row form returns
/// them (packed words in the standard order, scale byte), and each block's amax max |h| over its
/// elements with NaN ignored: the partials of the output amax.
template <class Format, int Blocks>
struct quantized_row {
  /// The segment's blocks, block b = output columns [b * block_size, (b + 1) * block_size) of the segment.
  quantized_block<Format> blocks[Blocks];
  /// max |x| over each block's activations, NaN ignored (the output amax's partials).
  float block_amax[Blocks];
  /// Blocks in the segment.
  static constexpr int blocks_per_row = Blocks;
  /// The amax of the first `valid_blocks` blocks (those inside the matrix), NaN ignored, +0 for none.
  /// \code
  /// fp4fuse::quantized_row<fp4fuse::format::nvfp4<>, 2> q{};  // as row_epilogue returns it for sink::hand_back
  /// q.block_amax[0] = 3.0f;
  /// q.block_amax[1] = 6.0f;
  /// const float a = q.amax(1);  // 3.0f: only block 0 lies inside the matrix
  /// \endcode
  FP4FUSE_HOST_DEVICE float amax(int valid_blocks = Blocks) const {
    float a = 0.0f;
    FP4FUSE_UNROLL
    for (int b = 0; b < Blocks; ++b) a = b < valid_blocks ? detail::max_num(a, block_amax[b]) : a;
    return a;
  }
};

namespace detail {

/// Quantizes Out activations as Out / block_size blocks of Format.
template <class Format, int Out>
FP4FUSE_HOST_DEVICE quantized_row<Format, Out / Format::block_size> quantize_activations(const float (&h)[Out],
                                                                                       const block_codec<Format>& codec) {
  constexpr int B = Format::block_size;
  quantized_row<Format, Out / B> q;
  FP4FUSE_UNROLL
  for (int b = 0; b < Out / B; ++b) {
    const float(&x)[B] = *reinterpret_cast<const float(*)[B]>(&h[b * B]);
    q.blocks[b] = codec.quantize(x);
    float a = 0.0f;
    FP4FUSE_UNROLL
    for (int i = 0; i < B; ++i) a = max_num(a, abs_float(x[i]));
    q.block_amax[b] = a;
  }
  return q;
}

/// The segment's blocks inside the matrix's columns (0..Blocks).
template <class Format, int Blocks, class Layout>
FP4FUSE_HOST_DEVICE int valid_row_blocks(const quantized_matrix<Format, Layout>& out, cuda::std::int64_t block0) {
  const cuda::std::int64_t left = out.layout.scale_cols - block0;
  return left <= 0 ? 0 : (left < Blocks ? static_cast<int>(left) : Blocks);
}

/// The sinks of the row form: direct or staged stores of the segment (scale bytes: the code inside
/// the matrix, 0x00 in the layout's padding).
template <bool Staged, class Format, class Layout, int Blocks>
FP4FUSE_HOST_DEVICE void store_row(const quantized_matrix<Format, Layout>& out, tile_origin origin, const quantized_row<Format, Blocks>& q,
                                   void* staging) {
  constexpr int bytes = Format::block_size / 2;
  const cuda::std::int64_t block0 = origin.gate_up_col / (2 * Format::block_size);
  if (origin.row < out.rows()) {
    cuda::std::uint8_t* dst = out.packed + origin.row * out.ld_packed + block0 * bytes;
    if constexpr (Staged && FP4FUSE_DEVICE_PASS) {  // on the host: the same bytes, stored directly
      auto* stage = static_cast<cuda::std::uint8_t*>(staging);
      FP4FUSE_UNROLL
      for (int b = 0; b < Blocks; ++b) store_block_words<false>(stage + b * bytes, q.blocks[b].packed);
      const int valid = valid_row_blocks<Format, Blocks>(out, block0);
      const int bulk = (valid * bytes) & ~15;  // whole 16-byte units
      if (bulk > 0) {
        bulk_store_fence();
        bulk_store(dst, stage, static_cast<cuda::std::uint32_t>(bulk));
        bulk_store_commit();
      }
      if constexpr (bytes == 8) {
        FP4FUSE_UNROLL
        for (int b = 0; b < Blocks; ++b) {  // the odd last block (b == valid - 1), without indexing registers at run time
          if (b == valid - 1 && valid * bytes != bulk) store_block_words<false>(dst + bulk, q.blocks[b].packed);
        }
      }
    } else {
      (void)staging;
      FP4FUSE_UNROLL
      for (int b = 0; b < Blocks; ++b) {
        if (block0 + b < out.layout.scale_cols) store_block_words<false>(dst + b * bytes, q.blocks[b].packed);
      }
    }
  }
  if (origin.row >= out.layout.padded_rows()) return;
  FP4FUSE_UNROLL
  for (int b = 0; b < Blocks; ++b) {
    const cuda::std::int64_t k = block0 + b;
    if (k < out.layout.padded_cols()) {
      out.scales[out.layout.offset(origin.row, k)] = origin.row < out.rows() && k < out.layout.scale_cols ? q.blocks[b].scale : cuda::std::uint8_t{0};
    }
  }
}

/// The description `Op` with a hand-back sink and no output amax: the row form's quantization
/// alone, for the forms that store a row or combine its amax themselves (the swap-AB form, the
/// host twins).
template <class Op>
using hand_back_of = fused_epilogue<typename Op::format_type, sink::hand_back, typename Op::activation_type, typename Op::gate_up_type,
                                    typename Op::bias_type, output_amax::none, typename Op::intermediate_type>;
/// `op` as `hand_back_of<Op>`: the same codec, activation, gate/up source, bias and rounding.
template <class Op>
FP4FUSE_HOST_DEVICE hand_back_of<Op> as_hand_back(const Op& op) {
  return {op.codec, {}, op.act, op.source, op.bias, {}, op.rounding};
}

/// A quantized segment's part of the output amax: its blocks inside the matrix's columns, +0 for a
/// row beyond the matrix (+0 adds nothing to `combine_output_amax` or its host twin).
template <class Format, class Layout, int Blocks>
FP4FUSE_HOST_DEVICE float row_amax_partial(const quantized_matrix<Format, Layout>& out, tile_origin origin, const quantized_row<Format, Blocks>& q) {
  if (origin.row >= out.rows()) return 0.0f;
  return q.amax(valid_row_blocks<Format, Blocks>(out, origin.gate_up_col / (2 * Format::block_size)));
}

/// Sends a quantized segment to the description's sink and amax; returns it for hand-back.
template <class Op, int Blocks>
FP4FUSE_HOST_DEVICE auto finish_row(const Op& op, tile_origin origin, const quantized_row<typename Op::format_type, Blocks>& q) {
  using Sink = typename Op::sink_type;
  using Format = typename Op::format_type;
  if constexpr (cuda::std::is_same_v<Sink, sink::hand_back>) {
    (void)origin;
    return q;
  } else {
    if constexpr (sink_traits<Sink>::staged) {
      store_row<true>(op.sink.out, origin, q, op.sink.staging);
    } else {
      store_row<false>(op.sink.out, origin, q, nullptr);
    }
    if constexpr (cuda::std::is_same_v<typename Op::amax_type, output_amax::global>) {
#if FP4FUSE_DEVICE_PASS
      const int valid = valid_row_blocks<Format, Blocks>(op.sink.out, origin.gate_up_col / (2 * Format::block_size));
      combine_output_amax(op.amax.amax, q.amax(valid), origin.row < op.sink.out.rows());
#else
      combine_output_amax_host(op.amax.amax, row_amax_partial(op.sink.out, origin, q));  // a host float
#endif
    }
  }
}

}  // namespace detail

/// The row form with gate and up interleaved in one accumulator: `acc` holds N consecutive gate/up
/// columns of one row, starting at gate/up column `origin.gate_up_col` (a multiple of 2 * block
/// size and of 2G; `tcgen05_32x32b_fragment<N>` leaves it so); its N / 2 activations act(gate + b)
/// * (up + b) are quantized as blocks of the format and sent to the sink. Per thread, except with
/// `output_amax::global` (then warp-collective: all 32 lanes call it, converged). Also on the host,
/// into host memory (the host twin is the function itself; a staged sink stores directly there).
/// \param op     the description (`fused_epilogue`): GateUp `gate_up::interleaved<G>`, G dividing N / 2
/// \param acc    the thread's N fp32 accumulators (N / 2 a multiple of the format's block size)
/// \param origin the thread's output row and the segment's first gate/up column
/// \return `quantized_row<Format, N / 2 / block_size>` for `sink::hand_back`, else nothing.
/// Bounds and padding (direct, staged): packed bytes for rows < out.rows() and blocks <
/// out.layout.scale_cols; scale bytes for rows < padded_rows() and blocks < padded_cols(), 0x00 in
/// the padding. Packed rows aligned to the block's bytes; staged: the segment's first packed byte
/// (row start + origin.gate_up_col / 4) 16-byte aligned too, as `cp.async.bulk` needs (with NVFP4
/// and N >= 64 an origin that is a multiple of 64, not only of 32), and each thread's `staging`:
/// N / 4 bytes of its own. Numerics: exactly `codec.quantize` per block; the block
/// order is the output column order.
/// \code
/// __device__ void epilogue(const float (&acc)[64], std::int64_t m0, std::int64_t n0, const float* d_S,
///                          const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   // acc: tcgen05.ld 32x32b.x64 of a 128 x 64 gate/up slice at (m0, n0), after tcgen05.wait::ld
///   using frag = fp4fuse::tcgen05_32x32b_fragment<64>;
///   const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*d_S), fp4fuse::sink::direct{out}};
///   fp4fuse::row_epilogue(op, acc, {m0 + frag::thread_row(), n0});
/// }
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int N>
FP4FUSE_HOST_DEVICE auto row_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op, const float (&acc)[N],
                                      tile_origin origin) {
  static_assert(gate_up::is_interleaved<GateUp>,
                "row_epilogue(op, acc, origin): one accumulator needs gate_up::interleaved<G>; for two accumulators pass gate and up (gate_up::separate)");
  constexpr int Out = N / 2;
  static_assert(N % 2 == 0 && Out % Format::block_size == 0,
                "row_epilogue: N / 2 output columns must be whole blocks (NVFP4: N a multiple of 32, MXFP4: of 64)");
  if constexpr (gate_up::is_interleaved<GateUp>) {
    constexpr int G = GateUp::granule;
    static_assert(Out % G == 0, "row_epilogue: the segment must hold whole gate/up granules (G divides N / 2)");
    float h[Out];
    FP4FUSE_UNROLL
    for (int j = 0; j < Out; ++j) {
      const int g = 2 * G * (j / G) + j % G, u = g + G;  // gate_up::interleaved<G>, from the segment's start
      h[j] = op.activate(acc[g], acc[u], origin.gate_up_col + g, origin.gate_up_col + u);
    }
    return detail::finish_row(op, origin, detail::quantize_activations(h, op.codec));
  }
}

/// The row form with gate and up in separate accumulators (`gate_up::separate`): gate[j] and up[j]
/// belong to output column origin.gate_up_col / 2 + j. A `column_bias` holds the gate's I values,
/// then the up's (count = 2I). Otherwise as the interleaved form.
/// \code
/// __device__ std::uint8_t separate_hand_back(const float (&gate)[16], const float (&up)[16], std::int64_t row, std::int64_t c0,
///                                            const fp4fuse::block_codec<fp4fuse::format::nvfp4<>>& codec) {
///   const fp4fuse::fused_epilogue op{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::separate{}};
///   const auto q = fp4fuse::row_epilogue(op, gate, up, {row, 2 * c0});
///   return q.blocks[0].scale;  // and q.blocks[0].packed[0..1]: one NVFP4 block, for the caller's own store
/// }
/// \endcode
template <class Format, class Sink, class Activation, class GateUp, class Bias, class Amax, class Intermediate, int Out>
FP4FUSE_HOST_DEVICE auto row_epilogue(const fused_epilogue<Format, Sink, Activation, GateUp, Bias, Amax, Intermediate>& op,
                                      const float (&gate)[Out], const float (&up)[Out], tile_origin origin) {
  static_assert(cuda::std::is_same_v<GateUp, gate_up::separate>, "row_epilogue(op, gate, up, origin): two accumulators are gate_up::separate");
  static_assert(Out % Format::block_size == 0, "row_epilogue: Out output columns must be whole blocks (NVFP4: 16, MXFP4: 32)");
  const cuda::std::int64_t c0 = origin.gate_up_col / 2;
  float h[Out];
  FP4FUSE_UNROLL
  for (int j = 0; j < Out; ++j) {
    if constexpr (cuda::std::is_same_v<Bias, column_bias>) {
      const cuda::std::int64_t I = op.bias.count / 2, c = c0 + j;
      const float g = c < I ? gate[j] + op.bias.data[c] : gate[j], u = c < I ? up[j] + op.bias.data[I + c] : up[j];
      h[j] = Intermediate::round(op.act.apply(g, u));
    } else {
      h[j] = op.activate(gate[j], up[j], 0, 0);
    }
  }
  return detail::finish_row(op, origin, detail::quantize_activations(h, op.codec));
}

}  // namespace fp4fuse
