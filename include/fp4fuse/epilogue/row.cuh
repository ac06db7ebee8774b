#pragma once
/// \file epilogue/row.cuh
/// The row form of the fused epilogue: one thread holds consecutive fp32 gate/up columns of one row
/// (`tcgen05.ld` 32x32b, `tcgen05_32x32b_fragment`; or any row segment in registers) and quantizes
/// whole blocks by itself, with no data exchanged between threads. Layers, each usable alone:
///
/// | piece | what |
/// |---|---|
/// | `swiglu_quantize_row<GateUp>(acc, act, codec, bias)` | hand-back: `quantized_row` (packed words + scale byte per block, and the segment's amax), host and device |
/// | `store_quantized_row(out, origin, q)` (epilogue/row_store.cuh) | direct global stores, bounds and scale padding as the fragment epilogues |
/// | `store_quantized_row_staged(out, origin, q, smem)` (epilogue/row_store.cuh) | staged in shared memory, written by a TMA bulk copy (sm_90+) |
/// | `combine_output_amax(d_amax, q.amax, inside)` (epilogue/output_amax.cuh) | the output amax, one atomic per warp |
/// | `swiglu_quantize_row_epilogue<GateUp>(acc, origin, act, codec, out, extras)` | all of it in one call |
///
/// Gate/up sources: `gate_up::interleaved<G>` (one accumulator of N = 2 * Out registers, any G
/// that divides Out) or `gate_up::separate` (two accumulators of Out registers). Formats: any
/// (`format::nvfp4<R>`: Out a multiple of 16; `format::mxfp4<R>`: a multiple of 32). Numerics are
/// exactly `block_codec<Format>::quantize` on each block's activations act(gate + b_g) * (up + b_u),
/// so bit-identical to the standalone `swiglu_quantize` on the same (biased) fp32 values
/// (tests/epilogue/row.cu).
#include <cuda_bf16.h>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/mxfp4.cuh"
#include "fp4fuse/nvfp4.cuh"

namespace fp4fuse {

/// An optional per-column bias of a row segment: value i belongs to the segment's column i (in
/// the accumulator's own column order) and is read for i < count only (0 beyond: columns past the
/// matrix); `data == nullptr` is no bias. Added in fp32 to gate and up before the activation (GPT-OSS);
/// columns without a bias value keep their accumulator unchanged (not + 0, which would turn -0 into +0).
/// \code
/// __host__ __device__ fp4fuse::column_bias segment_bias(const float* d_bias, std::int64_t I, std::int64_t gate_up_col0) {
///   return {d_bias + gate_up_col0, 2 * I - gate_up_col0};  // a [2I] bias, interleaved as the GEMM's columns
/// }
/// \endcode
struct column_bias {
  /// The bias of the segment's first column (nullptr: none).
  const float* data = nullptr;
  /// Columns of the segment that have a bias value (the matrix's columns from the segment on).
  cuda::std::int64_t count = 0;
  /// Column i's value v with its bias: v + data[i] (fp32) for i < count, else v itself.
  FP4FUSE_HOST_DEVICE float add(float v, int i) const { return data != nullptr && i < count ? v + data[i] : v; }
};

/// A thread's quantized row segment: `Blocks` blocks of `Format` as the hand-back form returns them
/// (packed words in the standard order, scale byte), and the segment's amax, max |act(gate) * up|
/// over its elements with NaN ignored (+0 for none): the partial of the output amax.
template <class Format, int Blocks>
struct quantized_row {
  /// The segment's blocks, block b = output columns [b * block_size, (b + 1) * block_size) of the segment.
  quantized_block<Format> blocks[Blocks];
  /// max |x| over each block's activations, NaN ignored (the output amax's partials).
  float block_amax[Blocks];
  /// Blocks in the segment.
  static constexpr int blocks_per_row = Blocks;
  /// The amax of the first `valid_blocks` blocks (those inside the matrix), NaN ignored.
  FP4FUSE_HOST_DEVICE float amax(int valid_blocks = Blocks) const {
    float a = 0.0f;
    FP4FUSE_UNROLL
    for (int b = 0; b < Blocks; ++b) a = b < valid_blocks ? detail::max_num(a, block_amax[b]) : a;
    return a;
  }
};

namespace detail {

/// act(gate) * up with the intermediate rounding, one element.
template <class Intermediate, class Activation>
FP4FUSE_HOST_DEVICE float activate_one(const Activation& act, float gate, float up) {
  float v = act.apply(gate, up);
  if constexpr (cuda::std::is_same_v<Intermediate, intermediate::bf16>) {
    v = __bfloat162float(__float2bfloat16_rn(v));  // __host__ __device__ in cuda_bf16.h
  }
  return v;
}

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

}  // namespace detail

/// The hand-back row form, gate and up interleaved in one accumulator: `acc` holds N consecutive
/// gate/up columns of one row, starting at a multiple of 2G (`tcgen05_32x32b_fragment<N>` leaves
/// it so); returns its N / 2 activations act(gate + b) * (up + b) quantized as blocks of `Format`.
/// Per thread, no collectives: callable from any thread, and on the host (the host twin is the
/// function itself).
/// \tparam GateUp `gate_up::interleaved<G>`, G dividing N / 2
/// \tparam Intermediate `intermediate::fp32` (default) or `intermediate::bf16` (act * up rounded first)
/// \param acc   the thread's N fp32 accumulators (N / 2 a multiple of the format's block size)
/// \param act   the gated activation
/// \param codec the format's codec (NVFP4: built from the global encode scale S)
/// \param bias  optional per-column bias of the N columns (`column_bias`)
/// Numerics: exactly `codec.quantize` per block (nvfp4.cuh, mxfp4.cuh); the block order is the output
/// column order.
/// \code
/// __device__ std::uint8_t row_hand_back(const float (&acc)[32], const fp4fuse::block_codec<fp4fuse::format::nvfp4<>>& codec) {
///   // acc: tcgen05.ld 32x32b.x32, one row's 32 gate/up columns interleaved by 8
///   const auto q = fp4fuse::swiglu_quantize_row<fp4fuse::gate_up::interleaved<8>>(acc, fp4fuse::activation::swiglu{}, codec);
///   return q.blocks[0].scale;  // and q.blocks[0].packed[0..1]: one NVFP4 block, for the caller's own store
/// }
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, int N, class Activation, class Format>
FP4FUSE_HOST_DEVICE quantized_row<Format, N / 2 / Format::block_size> swiglu_quantize_row(const float (&acc)[N], const Activation& act,
                                                                                        const block_codec<Format>& codec,
                                                                                        column_bias bias = {}) {
  static_assert(gate_up::is_interleaved<GateUp>,
                "swiglu_quantize_row(acc, ...): one accumulator needs gate_up::interleaved<G>; for two accumulators pass gate and up (gate_up::separate)");
  constexpr int Out = N / 2;
  constexpr int G = GateUp::granule;
  static_assert(N % 2 == 0 && Out % Format::block_size == 0,
                "swiglu_quantize_row: N / 2 output columns must be whole blocks (NVFP4: N a multiple of 32, MXFP4: of 64)");
  static_assert(Out % G == 0, "swiglu_quantize_row: the segment must hold whole gate/up granules (G divides N / 2)");
  float h[Out];
  FP4FUSE_UNROLL
  for (int j = 0; j < Out; ++j) {
    const int g = 2 * G * (j / G) + j % G, u = g + G;  // gate_up::interleaved<G>, from the segment's start
    h[j] = detail::activate_one<Intermediate>(act, bias.add(acc[g], g), bias.add(acc[u], u));
  }
  return detail::quantize_activations(h, codec);
}

/// The hand-back row form with gate and up in separate accumulators (`gate_up::separate`): gate[j]
/// and up[j] belong to the segment's output column j. Otherwise as the interleaved form.
/// \code
/// __device__ std::uint8_t separate_hand_back(const float (&gate)[16], const float (&up)[16],
///                                            const fp4fuse::block_codec<fp4fuse::format::nvfp4<>>& codec) {
///   const auto q = fp4fuse::swiglu_quantize_row<fp4fuse::gate_up::separate>(gate, up, fp4fuse::activation::swiglu{}, codec);
///   return q.blocks[0].scale;
/// }
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, int Out, class Activation, class Format>
FP4FUSE_HOST_DEVICE quantized_row<Format, Out / Format::block_size> swiglu_quantize_row(const float (&gate)[Out], const float (&up)[Out],
                                                                                      const Activation& act, const block_codec<Format>& codec,
                                                                                      column_bias gate_bias = {}, column_bias up_bias = {}) {
  static_assert(cuda::std::is_same_v<GateUp, gate_up::separate>,
                "swiglu_quantize_row(gate, up, ...): two accumulators are gate_up::separate");
  static_assert(Out % Format::block_size == 0, "swiglu_quantize_row: Out output columns must be whole blocks (NVFP4: 16, MXFP4: 32)");
  float h[Out];
  FP4FUSE_UNROLL
  for (int j = 0; j < Out; ++j) h[j] = detail::activate_one<Intermediate>(act, gate_bias.add(gate[j], j), up_bias.add(up[j], j));
  return detail::quantize_activations(h, codec);
}

}  // namespace fp4fuse
