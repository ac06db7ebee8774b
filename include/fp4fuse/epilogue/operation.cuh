#pragma once
/// \file epilogue/operation.cuh
/// What the fused epilogue computes, as one small aggregate of tags and values: `fused_epilogue`.
/// The adapters say how, one per accumulator fragment, and all take the same description:
/// `mma_epilogue` (a warp's `mma.sync` m16n8 tiles) and `wgmma_epilogue` (a warpgroup's `wgmma`
/// m64nNk16 registers) in epilogue/swiglu_quantize.cuh, `row_epilogue` (one thread's consecutive
/// columns of one row, `tcgen05.ld` 32x32b) in epilogue/row.cuh, `wgmma_swap_ab_epilogue` (a
/// swap-AB wgmma fragment: gate/up rows as M, tokens as N) in epilogue/wgmma_swap_ab.cuh;
/// docs/EPILOGUE.md compares them.
///
/// Per element: h = Intermediate::round(act(gate + b_gate) * (up + b_up)); per block of the format:
/// `block_codec<Format>::quantize` of the block's h (so bit-identical to the standalone
/// `swiglu_quantize` kernel on the same fp32 gate/up values). The result goes to the sink:
/// `sink::direct{out}` (global stores: packed bytes inside the matrix, scale codes, 0x00 in the
/// scale padding the tile covers), `sink::staged{out, staging}` (the packed bytes through shared
/// memory and `cp.async.bulk`, sm_90+, scales as direct; `wait_staged_stores()` before the staging
/// is reused) or `sink::hand_back` (nothing stored: the adapter returns the quantized blocks and
/// their amax partials for the caller's own store);
/// and the output amax max |h| (NaN ignored) over the matrix, for delayed scaling:
/// `output_amax::global{d_amax}` combines it into device memory (`combine_output_amax`, one
/// `atomicMax` per warp; the adapter is then warp-collective), `output_amax::none` computes nothing.
/// With `sink::hand_back` the amax partials are part of the returned blocks.
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/mxfp4.cuh"
#include "fp4fuse/nvfp4.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

/// No bias: the accumulators go to the activation unchanged (the default; no instruction).
struct no_bias {
  /// v itself.
  /// \code
  /// static_assert(fp4fuse::no_bias::add(1.5f, 0) == 1.5f);  // no instruction
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr float add(float v, cuda::std::int64_t /*col*/) { return v; }
};

/// A per-column bias of the [M, 2I] gate/up accumulator matrix (GPT-OSS), added in fp32 to gate and
/// up before the activation: `data[c]` belongs to gate/up column c, in the epilogue's gate/up
/// layout (`gate_up::interleaved<G>`: as the GEMM's columns; `gate_up::separate`: the gate's I
/// values, then the up's I values). In the row form, columns c >= `count` keep their accumulator
/// unchanged (not + 0, which would turn -0 into +0). `data` is read for every column below
/// `count` (no bias is the type `no_bias`, not a null pointer). The fragment forms (`mma_add_bias`) read two
/// neighbouring columns at once: `data` 8-byte aligned and `count` even there, and `count` the
/// matrix's whole gate/up width (they add +0 past it, where nothing is stored).
/// \code
/// __host__ __device__ fp4fuse::column_bias expert_bias(const float* d_bias, std::int64_t I) {
///   return {d_bias, 2 * I};  // an expert's [2I] bias, in the GEMM's gate/up column order
/// }
/// \endcode
struct column_bias {
  /// The bias of gate/up column 0.
  const float* data = nullptr;
  /// Columns that have a bias value (2I).
  cuda::std::int64_t count = 0;
  /// Column col's value v with its bias: v + data[col] (fp32) for col < count, else v itself.
  /// \code
  /// const float bias[2] = {0.5f, -1.0f};  // in device code: the expert's [2I] bias in device memory
  /// const fp4fuse::column_bias b{bias, 2};
  /// const float g = b.add(1.0f, 0), past = b.add(-0.0f, 2);  // 1.5f; -0.0f (column 2 >= count: unchanged)
  /// \endcode
  FP4FUSE_HOST_DEVICE float add(float v, cuda::std::int64_t col) const { return col < count ? v + data[col] : v; }
};

/// Where the fused epilogue's quantized output goes (see the file comment).
namespace sink {

/// Direct global stores into `out` (a non-grouped layout: a grouped one is written per expert,
/// `layout.expert(e)`).
template <class Format, class Layout>
struct direct {
  static_assert(!scale_layout::is_grouped<Layout>,
                "sink::direct: a grouped (MoE) scale layout is written per expert; pass each expert's block (layout.expert(e))");
  /// The quantized output [M, I].
  quantized_matrix<Format, Layout> out;
};

/// The packed bytes staged in shared memory and copied to `out` by `cp.async.bulk` (sm_90+; a copy
/// traps elsewhere, and a row-form segment of a single NVFP4 block, which needs no copy, is stored
/// directly there); scale bytes stored directly. `staging`: 16-byte aligned shared memory of the
/// adapter's scope, not shared with another one: a thread's Blocks * block_size / 2 bytes (row
/// form), a warp's 32 * Tiles bytes (mma.sync form) or a warpgroup's 32 * Registers bytes (wgmma
/// form). Packed rows and the tile's first packed byte 16-byte aligned.
template <class Format, class Layout>
struct staged {
  static_assert(!scale_layout::is_grouped<Layout>,
                "sink::staged: a grouped (MoE) scale layout is written per expert; pass each expert's block (layout.expert(e))");
  /// The quantized output [M, I].
  quantized_matrix<Format, Layout> out;
  /// Shared memory for the adapter's packed bytes.
  void* staging;
};

/// Nothing stored: the adapter returns the quantized blocks.
struct hand_back {};

/// `sink::direct{out}` deduces the output's format and layout.
/// \code
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{};  // the [M, I] output
/// const fp4fuse::sink::direct s{out};  // sink::direct<format::nvfp4<>, scale_layout::swizzled_128x4>
/// \endcode
template <class Format, class Layout>
direct(quantized_matrix<Format, Layout>) -> direct<Format, Layout>;
/// `sink::staged{out, staging}` deduces the output's format and layout.
/// \code
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{};  // the [M, I] output
/// void* staging = nullptr;  // in the kernel: the adapter's own 16-byte aligned shared memory
/// const fp4fuse::sink::staged s{out, staging};  // sink::staged<format::nvfp4<>, scale_layout::swizzled_128x4>
/// \endcode
template <class Format, class Layout>
staged(quantized_matrix<Format, Layout>, void*) -> staged<Format, Layout>;

}  // namespace sink

/// Whether and where the fused epilogue reduces its output amax (see the file comment).
namespace output_amax {

/// No output amax (the default; no instruction).
struct none {};

/// max |h| over the matrix combined into `*amax` (device memory, +0 before the GEMM; NaN ignored).
struct global {
  /// Device memory of one float.
  float* amax;
};

}  // namespace output_amax

namespace detail {
template <class Sink>
struct sink_traits {
  static constexpr bool valid = false;
};
template <class F, class L>
struct sink_traits<sink::direct<F, L>> {
  static constexpr bool valid = true, stores = true, staged = false;
  using format = F;
};
template <class F, class L>
struct sink_traits<sink::staged<F, L>> {
  static constexpr bool valid = true, stores = true, staged = true;
  using format = F;
};
template <>
struct sink_traits<sink::hand_back> {
  static constexpr bool valid = true, stores = false, staged = false;
};
template <class Sink, class Format>
constexpr bool sink_matches() {
  if constexpr (!sink_traits<Sink>::valid) {
    return true;  // reported by its own assertion
  } else if constexpr (!sink_traits<Sink>::stores) {
    return true;
  } else {
    return cuda::std::is_same_v<typename sink_traits<Sink>::format, Format>;
  }
}
}  // namespace detail

/// The fused epilogue's description: activation, gate/up source, format and recipe with the global
/// scale (`codec`), bias, output and sink, output amax, intermediate rounding. The adapters take it
/// (and a fragment and its `tile_origin`); numerics, bounds and padding are the same in all.
/// \tparam Format       `format::nvfp4<R>` or `format::mxfp4<R>`: the codec's and the output's
/// \tparam Sink         `sink::direct<Format, L>` (default, swizzled 128x4 scales), `sink::staged<Format, L>`, `sink::hand_back`
/// \tparam Activation   `activation::swiglu` (default), `swiglu_clamped`, `geglu_tanh`, the fast ones
/// \tparam GateUp       `gate_up::interleaved<G>` (fragment forms: G = 8) or `gate_up::separate` (row form)
/// \tparam Bias         `no_bias` (default) or `column_bias`
/// \tparam Amax         `output_amax::none` (default) or `output_amax::global`
/// \tparam Intermediate `intermediate::fp32` (default) or `intermediate::bf16`
/// Class template argument deduction reads every parameter from the members' values:
/// \code
/// __device__ void describe(const float* d_S, float* d_amax, const float* d_bias, std::int64_t I,
///                          const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   const fp4fuse::fused_epilogue plain{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*d_S), fp4fuse::sink::direct{out}};
///   const fp4fuse::fused_epilogue full{plain.codec, fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu_clamped{},
///                                      fp4fuse::gate_up::interleaved<8>{}, fp4fuse::column_bias{d_bias, 2 * I},
///                                      fp4fuse::output_amax::global{d_amax}};
///   (void)full;
/// }
/// \endcode
template <class Format, class Sink = sink::direct<Format, scale_layout::swizzled_128x4>, class Activation = activation::swiglu,
          class GateUp = gate_up::interleaved<8>, class Bias = no_bias, class Amax = output_amax::none,
          class Intermediate = intermediate::fp32>
struct fused_epilogue {
  static_assert(detail::is_format<Format>, "fused_epilogue<Format, ...>: Format must be format::nvfp4<R> or format::mxfp4<R>");
  static_assert(detail::sink_traits<Sink>::valid, "fused_epilogue: Sink must be sink::direct<F, L>, sink::staged<F, L> or sink::hand_back");
  static_assert(detail::sink_matches<Sink, Format>(),
                "fused_epilogue: the sink's output must have the codec's format (format and recipe), e.g. block_codec<F> with sink::direct<F, L>");
  static_assert(gate_up::is_interleaved<GateUp> || cuda::std::is_same_v<GateUp, gate_up::separate>,
                "fused_epilogue: GateUp is the accumulator's gate/up source, gate_up::interleaved<G> or gate_up::separate");
  static_assert(cuda::std::is_same_v<Bias, no_bias> || cuda::std::is_same_v<Bias, column_bias>, "fused_epilogue: Bias must be no_bias or column_bias");
  static_assert(cuda::std::is_same_v<Amax, output_amax::none> || cuda::std::is_same_v<Amax, output_amax::global>,
                "fused_epilogue: Amax must be output_amax::none or output_amax::global");
  static_assert(cuda::std::is_same_v<Intermediate, intermediate::fp32> || cuda::std::is_same_v<Intermediate, intermediate::bf16>,
                "fused_epilogue: Intermediate must be intermediate::fp32 or intermediate::bf16");
  static_assert(!(cuda::std::is_same_v<Sink, sink::hand_back> && cuda::std::is_same_v<Amax, output_amax::global>),
                "fused_epilogue: with sink::hand_back the amax partials come with the returned blocks (their bounds are the caller's); output_amax::global needs sink::direct or sink::staged");
  /// The format (and recipe).
  using format_type = Format;
  /// The sink.
  using sink_type = Sink;
  /// The gated activation.
  using activation_type = Activation;
  /// The gate/up source.
  using gate_up_type = GateUp;
  /// The bias type.
  using bias_type = Bias;
  /// The output-amax kind.
  using amax_type = Amax;
  /// The intermediate rounding.
  using intermediate_type = Intermediate;
  /// The format's codec, built from the global encode scale (NVFP4) or without one (MXFP4).
  block_codec<Format> codec;
  /// Where the output goes.
  Sink sink;
  /// The gated activation.
  Activation act = {};
  /// The accumulator's gate/up source (a tag).
  GateUp source = {};
  /// The bias added to gate and up.
  Bias bias = {};
  /// The output amax.
  Amax amax = {};
  /// The intermediate rounding (a tag).
  Intermediate rounding = {};

  /// act(gate + bias) * (up + bias) with the intermediate rounding, gate and up from gate/up
  /// columns gate_col and up_col.
  /// \code
  /// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::mxfp4<>>(), fp4fuse::sink::hand_back{}};
  /// const float h = op.activate(gate, up, 0, 8);  // == activation::swiglu{}.apply(gate, up): no bias, fp32
  /// \endcode
  FP4FUSE_HOST_DEVICE float activate(float gate, float up, cuda::std::int64_t gate_col, cuda::std::int64_t up_col) const {
    return Intermediate::round(act.apply(bias.add(gate, gate_col), bias.add(up, up_col)));
  }
};

/// Deduction of the description from its members' values (a braced `fused_epilogue{codec, sink, ...}`):
/// the codec gives the format; each further value its parameter. nvcc only: clang-CUDA treats
/// deduction guides as host functions, so spell the type out in clang device code.
/// \code
/// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::hand_back{}};
/// // fused_epilogue<format::nvfp4<>, sink::hand_back>: swiglu, interleaved<8>, no bias, no amax, fp32
/// \endcode
template <class F, class S>
fused_epilogue(block_codec<F>, S) -> fused_epilogue<F, S>;
/// As above, with further members.
/// \code
/// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::mxfp4<>>(), fp4fuse::sink::hand_back{}, fp4fuse::activation::geglu_tanh{}};
/// \endcode
template <class F, class S, class A>
fused_epilogue(block_codec<F>, S, A) -> fused_epilogue<F, S, A>;
/// As above, with further members.
/// \code
/// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::mxfp4<>>(), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{},
///                                  fp4fuse::gate_up::separate{}};  // the row form's gate and up accumulators
/// \endcode
template <class F, class S, class A, class G>
fused_epilogue(block_codec<F>, S, A, G) -> fused_epilogue<F, S, A, G>;
/// As above, with further members.
/// \code
/// const float* d_bias = nullptr;  // [2I] in device memory
/// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu_clamped{},
///                                  fp4fuse::gate_up::interleaved<8>{}, fp4fuse::column_bias{d_bias, 2 * I}};  // GPT-OSS
/// \endcode
template <class F, class S, class A, class G, class B>
fused_epilogue(block_codec<F>, S, A, G, B) -> fused_epilogue<F, S, A, G, B>;
/// As above, with further members.
/// \code
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{};  // the [M, I] output
/// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu{},
///                                  fp4fuse::gate_up::interleaved<8>{}, fp4fuse::no_bias{}, fp4fuse::output_amax::global{d_amax}};
/// \endcode
template <class F, class S, class A, class G, class B, class M>
fused_epilogue(block_codec<F>, S, A, G, B, M) -> fused_epilogue<F, S, A, G, B, M>;
/// As above, with further members.
/// \code
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{};  // the [M, I] output
/// const fp4fuse::fused_epilogue op{fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S), fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu{},
///                                  fp4fuse::gate_up::interleaved<8>{}, fp4fuse::no_bias{}, fp4fuse::output_amax::none{}, fp4fuse::intermediate::bf16{}};
/// \endcode
template <class F, class S, class A, class G, class B, class M, class R>
fused_epilogue(block_codec<F>, S, A, G, B, M, R) -> fused_epilogue<F, S, A, G, B, M, R>;

}  // namespace fp4fuse
