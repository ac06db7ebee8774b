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
#include "fp4fuse/detail/fast_div.cuh"
#include "fp4fuse/detail/launch.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"
#include "fp4fuse/detail/swiglu_quantize_kernels.cuh"

namespace fp4fuse {

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
/// `apply` composed with the codec; for `recipe::vllm`, to the device codec, whose rcp.approx
/// multiplier is not the host's, as in `quantize`); with per_row,
/// S_r = nvfp4_global_encode_scale(max |h| over the row, NaN ignored) of the activated (and per `Intermediate` rounded) values h, rows that fit
/// one CTA in one pass over the input, longer rows in two with the same bits (docs/NUMERICS.md,
/// "Per-row global scales"). Requirements: `gate_up` [M, 2I] (16-byte aligned, ld a whole number of
/// 16-byte vectors), `out` [M, I] (`argument_checker::quantized`: packed aligned to one block's
/// bytes, ld_packed >= I / 2 and whole blocks, scales non-null), I a multiple of the block size
/// and of G, 2I below 2^31; per_row's S_r array non-null and 4-byte aligned, M floats; the grid's
/// threads (and per_row's padded rows, a CTA each) below 2^31 - 256. Validated before
/// any CUDA call; on error nothing is launched or written.
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
  argument_checker c("fp4fuse::swiglu_quantize");
  c.quantized(out, "out");
  // A width that is not whole blocks would otherwise only show as a shape mismatch with the layout.
  c.require(gate_up.cols % (2 * Format::block_size) == 0, status::not_multiple_of_block,
            "gate_up.cols = %lld gives I = %lld output columns: I must be a multiple of the %s block size %d", static_cast<long long>(gate_up.cols),
            static_cast<long long>(gate_up.cols / 2), Format::block_size == 16 ? "NVFP4" : "MXFP4", Format::block_size);
  detail::check_gate_up<GateUp>(c, gate_up, out.rows(), out.cols());
  constexpr int P_row = detail::swiglu_row_blocks;
  const bool one_pass = detail::check_scale<detail::row_capacity<P_row>>(c, out.layout, scale);
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
  argument_checker c("fp4fuse::gated_activation");
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
