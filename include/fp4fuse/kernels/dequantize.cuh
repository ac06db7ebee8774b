#pragma once
/// \file kernels/dequantize.cuh
/// Standalone dequantization: packed E2M1 [M, K/2] + block scales (either layout) -> [M, K]
/// bfloat16/half/float. Each value is computed in fp32 as (e2m1 * scale) * (1/S) for NVFP4
/// (the first product is exact) and e2m1 * 2^(e-127) for MXFP4, then rounded to the output type.
#include <cuda/cmath>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/fast_div.cuh"
#include "fp4fuse/detail/launch.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/mxfp4.cuh"
#include "fp4fuse/nvfp4.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"
#include "fp4fuse/detail/dequantize_kernel.cuh"

namespace fp4fuse {

/// Dequantizes NVFP4/MXFP4 to a row-major [M, K] matrix on `stream`, with the global scale that
/// `scale` describes (`global_scale::per_tensor` for NVFP4, `global_scale::none` for MXFP4).
/// Numerics: see the file comment; bit-identical to `block_codec<Format>::dequantize` on the host
/// followed by the same rounding to `Out`. Requirements: `in.packed` aligned to one block's bytes
/// (8 NVFP4, 16 MXFP4), `out` [M, K] 16-byte aligned with a whole number of 16-byte vectors per
/// `ld`, K below 2^31 (32-bit column offsets). Validated before any CUDA call; on error nothing
/// is written.
/// \code
/// using L = fp4fuse::scale_layout::swizzled_128x4;
/// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, L, const uint8_t> in{packed, K / 2, scales, L{M, K / 16}};
/// auto r = fp4fuse::dequantize(in, fp4fuse::matrix_view<__nv_bfloat16>{y, M, K, K}, fp4fuse::global_scale::per_tensor{d_S}, stream);
/// \endcode
template <class Format, class Layout, class Out, class Scale = detail::unnamed_global_scale>
result dequantize(const quantized_matrix<Format, Layout, const cuda::std::uint8_t>& in, const matrix_view<Out>& out, const Scale& scale,
                  cudaStream_t stream = nullptr) {
  static_assert(detail::is_supported_element<Out>, "fp4fuse::dequantize: the output must be __nv_bfloat16, __half or float");
  static_assert(!scale_layout::is_grouped<Layout>,
                "fp4fuse::dequantize: a grouped (MoE) scale layout is written per expert; pass each expert's block (layout.expert(e)) or use a grouped kernel");
  static_assert(detail::fits_global_scale<Format, Scale>());
  static_assert(!cuda::std::is_same_v<Scale, global_scale::per_row> && !cuda::std::is_same_v<Scale, global_scale::per_group>,
                "fp4fuse::dequantize: takes global_scale::per_tensor (NVFP4) or global_scale::none (MXFP4); dequantize a row-scaled "
                "matrix row by row, each with its own per_tensor");
  argument_checker c("fp4fuse::dequantize");
  c.quantized(in, "in");
  c.scale(scale);
  c.matrix(out, "out", 1, Format::block_size, "the block size");
  c.require(in.rows() == out.rows && in.cols() == out.cols, status::bad_shape, "in (its layout) is [%lld, %lld] but out is [%lld, %lld]",
            static_cast<long long>(in.rows()), static_cast<long long>(in.cols()), static_cast<long long>(out.rows),
            static_cast<long long>(out.cols));
  const cuda::std::int64_t blocks = in.layout.scale_cols;
  c.grid(out.rows * blocks, "rows x blocks");
  if (!c) return c.outcome();
  if (out.rows == 0) return {};
  const auto total = static_cast<cuda::std::uint32_t>(out.rows * blocks);
  return detail::launch(&detail::dequantize_kernel<Format, Layout, Out>, cuda::ceil_div(total, 256u), 256, stream, "fp4fuse::dequantize", in,
                        detail::scale_pointer(scale), out, detail::fast_div(static_cast<cuda::std::uint32_t>(blocks)), total);
}

}  // namespace fp4fuse
