#pragma once
/// \file kernels/quantize.cuh
/// Standalone quantization: [M, K] row-major bfloat16/half/float (leading dimension ld, in
/// elements) -> packed E2M1 [M, K/2] (leading dimension in bytes) + block scales in a scale layout.
///
/// A warp per tile of 32 x P consecutive scale blocks of one row (P = 2 for large launches, 1 for
/// small ones and for MXFP4 of floats, whose block is 128 input bytes; lane l owns blocks l + 32 p,
/// so every load and store of the warp is coalesced):
/// 16-byte streaming loads, the block amax and encoding in registers (detail/fast_block_encode.cuh:
/// the codec's bits with fewer instructions), one 8- or 16-byte store per block. The grid covers
/// the scale layout's padded extent, so every padding scale byte is written as 0x00 by the thread
/// that owns it. The NVFP4 global encode scale is read from device memory (the launch can be
/// captured in a CUDA graph), or computed per row (`global_scale::per_row`: a CTA per row holding
/// the row in one pass; rows longer than a CTA holds take a row-amax pass, then the tiled kernel).
#include <cub/block/block_reduce.cuh>
#include <cuda/cmath>
#include <cuda/functional>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/fast_block_encode.cuh"
#include "fp4fuse/detail/fast_div.cuh"
#include "fp4fuse/detail/launch.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"
#include "fp4fuse/detail/quantize_kernels.cuh"

namespace fp4fuse {

/// Quantizes a row-major [M, K] matrix to NVFP4 or MXFP4 on `stream`, with the global scale that
/// `scale` describes: `global_scale::per_tensor` (NVFP4, S read from device memory),
/// `global_scale::per_row` (NVFP4, S_r computed per row and written) or `global_scale::none`
/// (MXFP4).
///
/// Numerics: each block exactly as `block_codec<Format>::quantize` on the host (bit-identical;
/// tests/kernels/quantize.cu; `recipe::vllm`: as the device codec, whose rcp.approx multiplier is
/// not the host's). With per_row, row r exactly as the host composition
/// S_r = nvfp4_global_encode_scale(row amax, NaN ignored), then `block_codec<Format>(S_r).quantize`
/// of each block; rows that fit one CTA take one pass over the input, longer rows two, with the
/// same bits (docs/NUMERICS.md, "Per-row global scales"). Scales go to `out.layout` (built for
/// {M, K / block}); its padding is written as 0x00. Requirements: `in` [M, K] bf16/half/float,
/// 16-byte aligned, K a multiple of the block size and below 2^31, `in.ld` a whole number of
/// 16-byte vectors; `out` of the same shape (`argument_checker::quantized`: packed aligned to one
/// block's bytes, 8 NVFP4 or 16 MXFP4, ld_packed >= K / 2 and whole blocks, scales non-null);
/// per_row's S_r array non-null and 4-byte aligned, M floats; the grid's threads (and per_row's
/// padded rows, a CTA each) below 2^31 - 256. Everything is validated before any CUDA call; on
/// error nothing is launched or written and the result names the argument.
/// \code
/// using F = fp4fuse::format::nvfp4<>;
/// using L = fp4fuse::scale_layout::swizzled_128x4;
/// const fp4fuse::matrix_view<const __nv_bfloat16> in{x, M, K, K};
/// const fp4fuse::quantized_matrix<F, L> out{packed, K / 2, scales, L{M, K / 16}};
/// if (const auto r = fp4fuse::quantize(in, out, fp4fuse::global_scale::per_tensor{d_S}, stream); !r) std::fprintf(stderr, "%s\n", r.message());
/// \endcode
template <class T, class Format, class Layout, class Scale = detail::unnamed_global_scale>
result quantize(const matrix_view<T>& in, const quantized_matrix<Format, Layout>& out, const Scale& scale, cudaStream_t stream = nullptr) {
  using E = cuda::std::remove_const_t<T>;
  static_assert(detail::is_supported_element<E>, "fp4fuse::quantize: the input must be __nv_bfloat16, __half or float");
  static_assert(!scale_layout::is_grouped<Layout>,
                "fp4fuse::quantize: a grouped (MoE) scale layout is written per expert; pass each expert's block (layout.expert(e)) or use a grouped kernel");
  static_assert(detail::fits_global_scale<Format, Scale>());
  static_assert(!cuda::std::is_same_v<Scale, global_scale::per_group>,
                "fp4fuse::quantize: per_group scales need a grouped layout; quantize each group with its own global_scale::per_tensor");
  constexpr bool per_row = cuda::std::is_same_v<Scale, global_scale::per_row>;
  argument_checker c("fp4fuse::quantize");
  c.matrix(in, "in", 1, Format::block_size, Format::block_size == 16 ? "the NVFP4 block size" : "the MXFP4 block size");
  c.quantized(out, "out");
  constexpr int P_row = detail::row_blocks_per_thread<E>;
  const bool one_pass = detail::check_scale<detail::row_capacity<P_row>>(c, out.layout, scale);
  c.require(in.rows == out.rows() && in.cols == out.cols(), status::bad_shape,
            "in is [%lld, %lld] but out (its layout) is [%lld, %lld]", static_cast<long long>(in.rows), static_cast<long long>(in.cols),
            static_cast<long long>(out.rows()), static_cast<long long>(out.cols()));
  cuda::std::uint32_t groups_per_row = 0, total = 0;
  constexpr int wide = detail::blocks_per_thread_for(Format::block_size * static_cast<int>(sizeof(E)));
  const int P = detail::blocks_per_thread_at(out.layout.padded_rows() * out.layout.padded_cols(), wide);
  if (c && !one_pass) detail::grid_extent(c, out.layout, P, groups_per_row, total);
  if (!c) return c.outcome();
  if (in.rows == 0) return {};
  const matrix_view<const E> input{in.data, in.rows, in.cols, in.ld};
  constexpr const char* entry = "fp4fuse::quantize";
  if constexpr (per_row) {
    if (one_pass) {
      const int threads = detail::row_threads_for(out.layout.padded_cols(), P_row);
      return detail::launch(threads == 64    ? &detail::quantize_per_row_kernel<64, P_row, Format, Layout, E>
                            : threads == 128 ? &detail::quantize_per_row_kernel<128, P_row, Format, Layout, E>
                                             : &detail::quantize_per_row_kernel<256, P_row, Format, Layout, E>,
                            out.layout.padded_rows(), threads, stream, entry, input, out, scale.encode_scales);
    }
    constexpr int P1 = detail::row_scale_pass_blocks;
    if (const result r = detail::launch(&detail::quantize_row_scale_kernel<detail::row_threads, P1, Format::block_size, E>, in.rows,
                                        detail::row_threads, stream, entry, input, static_cast<cuda::std::uint32_t>(out.layout.scale_cols),
                                        scale.encode_scales);
        !r) {
      return r;
    }
  }
  return detail::launch(P == 1 ? &detail::quantize_kernel<1, Format, Layout, E, per_row> : &detail::quantize_kernel<wide, Format, Layout, E, per_row>,
                        cuda::ceil_div(total, 256u), 256, stream, entry, input, out, detail::scale_pointer(scale),
                        detail::fast_div(groups_per_row), total);
}

}  // namespace fp4fuse
