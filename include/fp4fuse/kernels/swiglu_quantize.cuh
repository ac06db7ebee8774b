#pragma once
/// \file kernels/swiglu_quantize.cuh
/// Standalone gated activation + quantization: [M, 2I] gate/up (bfloat16/half/float) ->
/// act(gate) * up as NVFP4/MXFP4 [M, I/2] + scales (`swiglu_quantize`), or as a compact
/// bfloat16/half/float [M, I] (`gated_activation`).
///
/// One thread per output block (warps own 32 consecutive blocks of a row): the gate and up runs of
/// the block are loaded with 16-byte streaming loads (for interleaved layouts with granules smaller than the block, one contiguous
/// window that registers de-interleave), the activation runs in fp32, and the block is quantized
/// in registers. `intermediate::bf16` rounds act*up to bfloat16 before quantizing, bit for bit
/// what a BF16 SwiGLU kernel followed by `quantize` produces (the peers' fused kernels do this);
/// `intermediate::fp32` (the default) quantizes the fp32 product.
#include <cuda/cmath>
#include <cuda/std/type_traits>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/kernel_support.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/kernels/quantize.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

namespace detail {
/// Loads the gate and up values of output columns [c0, c0 + N) as floats.
template <class GateUp, class T, int N>
FP4FUSE_DEVICE void load_gate_up(const T* __restrict__ row, cuda::std::int64_t c0, cuda::std::int64_t I, float (&gate)[N],
                                 float (&up)[N]) {
  constexpr int G = [] {
    if constexpr (cuda::std::is_same_v<GateUp, gate_up::split_gate_first> || cuda::std::is_same_v<GateUp, gate_up::split_up_first>) {
      return 1 << 30;
    } else {
      return GateUp::granule;
    }
  }();
  if constexpr (G >= N) {
    // The block's gate and up values are two contiguous runs.
    load_floats(row + GateUp::gate_col(c0, I), gate);
    load_floats(row + GateUp::up_col(c0, I), up);
  } else {
    // Granules smaller than the block: one contiguous window [2 c0, 2 c0 + 2N) holds both.
    float window[2 * N];
    load_floats(row + 2 * c0, window);
    FP4FUSE_UNROLL
    for (int j = 0; j < N; ++j) {
      gate[j] = window[(j / G) * 2 * G + j % G];
      up[j] = window[(j / G) * 2 * G + G + j % G];
    }
  }
}

template <class Intermediate, class Activation, int N>
FP4FUSE_DEVICE void activate(const Activation& act, const float (&gate)[N], const float (&up)[N], float (&h)[N]) {
  FP4FUSE_UNROLL
  for (int j = 0; j < N; ++j) {
    h[j] = act.apply(gate[j], up[j]);
    if constexpr (cuda::std::is_same_v<Intermediate, intermediate::bf16>) {
      h[j] = __bfloat162float(__float2bfloat16_rn(h[j]));
    }
  }
}

/// swiglu_quantize's source: the gate and up runs of each block, activated when the block is
/// quantized.
template <class GateUp, class Activation, class Intermediate, class T, int B, int P, int Stride = lanes>
struct gate_up_blocks {
  // Not an aggregate: aggregate initialisation would zero gate and up on the hot path.
  FP4FUSE_DEVICE gate_up_blocks(const T* row_start, cuda::std::uint32_t first_col, cuda::std::int64_t cols, const Activation& activation)
      : row(row_start), col0(first_col), I(cols), act(activation) {}
  const T* row;
  cuda::std::uint32_t col0;
  cuda::std::int64_t I;
  const Activation& act;
  float gate[P][B], up[P][B];
  FP4FUSE_DEVICE void load(int p) {
    load_gate_up<GateUp>(row, static_cast<cuda::std::int64_t>(col0 + Stride * p) * B, I, gate[p], up[p]);
  }
  template <class Codec>
  FP4FUSE_DEVICE typename Codec::block_type quantize(const Codec& codec, int p) const {
    float h[B];
    activate<Intermediate>(act, gate[p], up[p], h);
    return quantize_block_fast(codec, h, amax_or_nonfinite(h), [](int, const float* y) { return sign_bytes_of_floats(y); });
  }
  /// Per-row scales: activates block p in place (gate[p] then holds act(gate) * up) and returns its
  /// amax with NaN ignored; `quantize_after_amax` then quantizes the stored values.
  FP4FUSE_DEVICE float row_amax(int p) {
    float h[B];
    activate<Intermediate>(act, gate[p], up[p], h);
    float m = 0.0f;
    FP4FUSE_UNROLL
    for (int i = 0; i < B; ++i) {
      gate[p][i] = h[i];
      m = fmaxf(m, fabsf(h[i]));
    }
    return m;
  }
  template <class Codec>
  FP4FUSE_DEVICE typename Codec::block_type quantize_after_amax(const Codec& codec, int p) const {
    return quantize_block_fast(codec, gate[p], amax_or_nonfinite(gate[p]), [](int, const float* y) { return sign_bytes_of_floats(y); });
  }
};

/// One block per thread: the activation makes this kernel issue-bound, where more warps in flight
/// matter more than shared index arithmetic (measured on the H200, bench/HISTORY.md, sixth session:
/// two blocks per thread ran at 38% of copy bandwidth against 52% with one).
inline constexpr int swiglu_blocks_per_thread = 1;

/// `scales`: the tensor's S (one float), or with `RowScales` S_r per row (pass 2 of the two-pass
/// per-row swiglu_quantize, after swiglu_row_scale_kernel).
template <int P, class Format, class Layout, class GateUp, class Activation, class Intermediate, class T, bool RowScales = false>
__global__ void __launch_bounds__(256) swiglu_quantize_kernel(matrix_view<const T> gate_up, quantized_matrix<Format, Layout> out,
                                                              const float* scales, Activation act, fast_div groups_per_row,
                                                              cuda::std::uint32_t total) {
  thread_position pos;
  if (!locate(groups_per_row, total, P, pos)) {
    return;
  }
  gate_up_blocks<GateUp, Activation, Intermediate, T, Format::block_size, P> source(gate_up.data + pos.row * gate_up.ld, pos.col0,
                                                                                   out.cols(), act);
  quantize_owned_blocks<P, Format, Layout, decltype(source), RowScales>(out, pos, scales, source);
}

template <int Threads, int P, class Format, class Layout, class GateUp, class Activation, class Intermediate, class T>
__global__ void __launch_bounds__(Threads) swiglu_quantize_per_row_kernel(matrix_view<const T> gate_up, quantized_matrix<Format, Layout> out,
                                                                          float* row_scales, Activation act) {
  const cuda::std::uint32_t row = blockIdx.x;
  gate_up_blocks<GateUp, Activation, Intermediate, T, Format::block_size, P, Threads> source(gate_up.data + row * gate_up.ld, threadIdx.x,
                                                                                             out.cols(), act);
  quantize_row_blocks<Threads, P>(out, row, row_scales, source);
}

/// Pass 1 of the two-pass per-row swiglu_quantize (I beyond one CTA): S_r from the one-pass
/// kernel's source (`gate_up_blocks::row_amax`, the same activation and rounding).
template <int Threads, int P, class Format, class GateUp, class Activation, class Intermediate, class T>
__global__ void __launch_bounds__(Threads) swiglu_row_scale_kernel(matrix_view<const T> gate_up, cuda::std::int64_t I,
                                                                   cuda::std::uint32_t scale_cols, float* row_scales, Activation act) {
  const T* row = gate_up.data + blockIdx.x * gate_up.ld;
  row_scale_pass<Threads, P>(scale_cols, row_scales, [&](cuda::std::uint32_t col) {
    return gate_up_blocks<GateUp, Activation, Intermediate, T, Format::block_size, P, Threads>(row, col, I, act);
  });
}

/// Blocks per thread of the per-row swiglu_quantize: 2 (64 floats of gate and up in registers),
/// rows up to 512 blocks (I <= 8192 for NVFP4).
inline constexpr int swiglu_row_blocks = 2;

template <class Out, class GateUp, class Activation, class T>
__global__ void __launch_bounds__(256) swiglu_kernel(matrix_view<const T> gate_up, matrix_view<Out> out, Activation act,
                                                     fast_div chunks_per_row, cuda::std::uint32_t total) {
  constexpr int N = 16;
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return;
  }
  const cuda::std::uint32_t row = chunks_per_row(idx);
  const cuda::std::uint32_t col = idx - row * chunks_per_row.divisor;
  float gate[N], up[N], h[N];
  load_gate_up<GateUp>(gate_up.data + row * gate_up.ld, static_cast<cuda::std::int64_t>(col) * N, out.cols, gate, up);
  activate<intermediate::fp32>(act, gate, up, h);
  store_floats(out.data + row * out.ld + col * N, h);
}

template <class GateUp>
inline constexpr cuda::std::int64_t granule_of = 1;
template <int G>
inline constexpr cuda::std::int64_t granule_of<gate_up::interleaved<G>> = G;

/// The gate/up input of an output I columns wide: [rows, 2I], 2I = gate_up.cols, I a multiple of
/// the interleave granule.
template <class GateUp, class T>
inline void check_gate_up(checker& c, const matrix_view<T>& gate_up, cuda::std::int64_t rows, cuda::std::int64_t I) {
  c.matrix(gate_up, "gate_up", 2, 2, "gate and up halves");
  c.require(gate_up.rows == rows && gate_up.cols == 2 * I, status::bad_shape,
            "gate_up is [%lld, %lld] but the output is [%lld, %lld]: gate_up must be [M, 2I] for an [M, I] output",
            static_cast<long long>(gate_up.rows), static_cast<long long>(gate_up.cols), static_cast<long long>(rows),
            static_cast<long long>(I));
  c.require(I % granule_of<GateUp> == 0, status::not_multiple_of_block,
            "the output width I = %lld must be a multiple of the gate/up granule G = %lld (gate_up::interleaved<G>)",
            static_cast<long long>(I), static_cast<long long>(granule_of<GateUp>));
}

}  // namespace detail

/// act(gate) * up quantized to NVFP4/MXFP4, on `stream`, with the global scale that `scale`
/// describes: `global_scale::per_tensor` (NVFP4, S read from device memory), `global_scale::per_row`
/// (NVFP4, S_r computed per row from the activated values and written) or `global_scale::none`
/// (MXFP4).
///
/// Template parameters: the gate/up layout (`gate_up::split_gate_first`, `split_up_first`,
/// `interleaved<G>`) and `intermediate::fp32` (default) or `intermediate::bf16`; the rest is
/// deduced: the format and the scale layout from `out`, the activation (`activation::swiglu`,
/// `swiglu_clamped`, `geglu_tanh`, or the opt-in `swiglu_fast`, `swiglu_clamped_fast`; passed by
/// value to the kernel, so runtime parameters such as alpha travel with it). Numerics: each block
/// bit-identical to the host composition of `Activation::apply` and `block_codec<Format>::quantize`
/// (for the fast activations, whose host `apply` differs from the device's, to the device's
/// `apply` composed with the codec); with per_row, S_r = nvfp4_global_encode_scale(max |h| over
/// the row, NaN ignored) of the activated (and per `Intermediate` rounded) values h, rows that fit
/// one CTA in one pass over the input, longer rows in two with the same bits (docs/NUMERICS.md,
/// "Per-row global scales"). Requirements: `gate_up` [M, 2I] (16-byte aligned, ld a whole number of
/// 16-byte vectors), `out` [M, I], I a multiple of the block size and of G. Validated before any
/// CUDA call; on error nothing is launched or written.
/// \code
/// using L = fp4fuse::scale_layout::swizzled_128x4;
/// const fp4fuse::matrix_view<const __nv_bfloat16> gu{gate_up, M, 2 * I, 2 * I};
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, L> out{packed, I / 2, scales, L{M, I / 16}};
/// auto r = fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gu, out, fp4fuse::global_scale::per_tensor{d_S},
///                                                                    fp4fuse::activation::swiglu{}, stream);
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, class T, class Format, class Layout, class Scale = detail::unnamed_global_scale,
          class Activation>
result swiglu_quantize(const matrix_view<T>& gate_up, const quantized_matrix<Format, Layout>& out, const Scale& scale, const Activation& act,
                       cudaStream_t stream = nullptr) {
  using E = cuda::std::remove_const_t<T>;
  static_assert(detail::is_supported_element<E>, "fp4fuse::swiglu_quantize: gate_up must be __nv_bfloat16, __half or float");
  static_assert(!scale_layout::is_grouped<Layout>,
                "fp4fuse::swiglu_quantize: a grouped (MoE) scale layout is written per expert; pass each expert's block (layout.expert(e)) or use a grouped kernel");
  static_assert(detail::fits_global_scale<Format, Scale>());
  static_assert(!cuda::std::is_same_v<Scale, global_scale::per_group>,
                "fp4fuse::swiglu_quantize: per_group scales need a grouped layout; quantize each group with its own global_scale::per_tensor");
  constexpr bool per_row = cuda::std::is_same_v<Scale, global_scale::per_row>;
  detail::checker c("fp4fuse::swiglu_quantize");
  c.quantized(out, "out");
  detail::check_gate_up<GateUp>(c, gate_up, out.rows(), out.cols());
  constexpr int P_row = detail::swiglu_row_blocks;
  bool one_pass = false;
  if constexpr (per_row) {
    c.scale(scale, out.layout.padded_rows());
    one_pass = out.layout.padded_cols() <= detail::row_capacity<P_row>;
  } else {
    c.scale(scale);
  }
  constexpr int P = detail::swiglu_blocks_per_thread;
  cuda::std::uint32_t groups_per_row = 0, total = 0;
  if (c && !one_pass) detail::grid_extent(c, out.layout, P, groups_per_row, total);
  if (!c) return c.outcome();
  if (out.rows() == 0) return {};
  const matrix_view<const E> input{gate_up.data, gate_up.rows, gate_up.cols, gate_up.ld};
  constexpr const char* entry = "fp4fuse::swiglu_quantize";
  if constexpr (per_row) {
    if (one_pass) {
      const int threads = detail::row_threads_for(out.layout.padded_cols(), P_row);
      return detail::launch(threads == 64    ? &detail::swiglu_quantize_per_row_kernel<64, P_row, Format, Layout, GateUp, Activation, Intermediate, E>
                            : threads == 128 ? &detail::swiglu_quantize_per_row_kernel<128, P_row, Format, Layout, GateUp, Activation, Intermediate, E>
                                             : &detail::swiglu_quantize_per_row_kernel<256, P_row, Format, Layout, GateUp, Activation, Intermediate, E>,
                            out.layout.padded_rows(), threads, stream, entry, input, out, scale.encode_scales, act);
    }
    if (const result r = detail::launch(&detail::swiglu_row_scale_kernel<detail::row_threads, P_row, Format, GateUp, Activation, Intermediate, E>,
                                        out.rows(), detail::row_threads, stream, entry, input, out.cols(),
                                        static_cast<cuda::std::uint32_t>(out.layout.scale_cols), scale.encode_scales, act);
        !r) {
      return r;
    }
  }
  return detail::launch(&detail::swiglu_quantize_kernel<P, Format, Layout, GateUp, Activation, Intermediate, E, per_row>,
                        cuda::ceil_div(total, 256u), 256, stream, entry, input, out, detail::scale_pointer(scale), act,
                        detail::fast_div(groups_per_row), total);
}

/// act(gate) * up as a compact [M, I] matrix of `Out` (bfloat16, half or float; rounded to nearest
/// even from fp32), on `stream`. The output is not quantized, so the scale is `global_scale::none`
/// (taken for the launchers' one argument order). Requirements: `gate_up` [M, 2I] as for
/// `swiglu_quantize`; `out` [M, I], 16-byte aligned, I a multiple of 16 and of G, `out.ld` a whole
/// number of 16-byte vectors.
/// \code
/// const fp4fuse::matrix_view<const __nv_bfloat16> gu{gate_up, M, 2 * I, 2 * I};
/// auto r = fp4fuse::gated_activation<fp4fuse::gate_up::split_gate_first>(gu, fp4fuse::matrix_view<__nv_bfloat16>{h, M, I, I},
///                                                                         fp4fuse::global_scale::none{}, fp4fuse::activation::swiglu{});
/// \endcode
template <class GateUp, class T, class Out, class Scale = detail::unnamed_global_scale, class Activation>
result gated_activation(const matrix_view<T>& gate_up, const matrix_view<Out>& out, const Scale&, const Activation& act,
                        cudaStream_t stream = nullptr) {
  using E = cuda::std::remove_const_t<T>;
  static_assert(detail::is_supported_element<E> && detail::is_supported_element<Out>,
                "fp4fuse::gated_activation: element types must be __nv_bfloat16, __half or float");
  static_assert(cuda::std::is_same_v<Scale, global_scale::none>,
                "fp4fuse::gated_activation: the compact output has no global scale; pass global_scale::none{}");
  detail::checker c("fp4fuse::gated_activation");
  c.matrix(out, "out", 16, 16, "16 output columns per thread");
  detail::check_gate_up<GateUp>(c, gate_up, out.rows, out.cols);
  c.grid(out.rows * (out.cols / 16), "rows x 16-column chunks of the output");
  if (!c) return c.outcome();
  if (out.rows == 0) return {};
  const auto total = static_cast<cuda::std::uint32_t>(out.rows * (out.cols / 16));
  return detail::launch(&detail::swiglu_kernel<Out, GateUp, Activation, E>, cuda::ceil_div(total, 256u), 256, stream,
                        "fp4fuse::gated_activation", matrix_view<const E>{gate_up.data, gate_up.rows, gate_up.cols, gate_up.ld}, out, act,
                        detail::fast_div(static_cast<cuda::std::uint32_t>(out.cols / 16)), total);
}

}  // namespace fp4fuse
