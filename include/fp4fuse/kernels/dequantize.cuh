#pragma once
/// \file kernels/dequantize.cuh
/// Standalone dequantization: packed E2M1 [M, K/2] + block scales (either layout) -> [M, K]
/// bfloat16/half/float. Each value is computed in fp32 as (e2m1 * scale) * (1/S) for NVFP4
/// (the first product is exact) and e2m1 * 2^(e-127) for MXFP4, then rounded to the output type.
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/kernel_support.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/kernels/quantize.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

/// Arguments of `dequantize`. `ld_input` in bytes, `ld_output` in elements.
template <class Out>
struct dequantize_args {
  const cuda::std::uint8_t* input = nullptr;   ///< packed E2M1 [rows, ld_input]; 8-byte (NVFP4) / 16-byte (MXFP4) aligned
  /// M, >= 0 (0: nothing is launched).
  cuda::std::int64_t rows = 0;
  cuda::std::int64_t cols = 0;                 ///< K (elements), a multiple of the block size
  cuda::std::int64_t ld_input = 0;             ///< bytes
  const cuda::std::uint8_t* scales = nullptr;  ///< in the given layout
  const float* global_encode_scale = nullptr;  ///< S (NVFP4 only): values are multiplied by 1/S
  Out* output = nullptr;                       ///< [rows, ld_output], 16-byte aligned
  cuda::std::int64_t ld_output = 0;            ///< elements, a multiple of 16 bytes / sizeof(Out)
};

namespace detail {

template <class Format, class Layout, class Out>
__global__ void __launch_bounds__(256) dequantize_kernel(dequantize_args<Out> a, Layout layout, fast_divmod blocks_per_row, cuda::std::uint32_t total) {
  using codec_t = block_codec<Format>;
  constexpr int B = codec_t::block_size;
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return;
  }
  const cuda::std::uint32_t row = blocks_per_row.div(idx);
  const cuda::std::uint32_t col = idx - row * blocks_per_row.divisor;
  const float decode = Format::has_global_scale ? 1.0f / *a.global_encode_scale : 1.0f;
  const float scale = codec_t::scale_value(a.scales[layout.offset(row, col)]);
  const cuda::std::uint8_t* src = a.input + row * a.ld_input + col * (B / 2);
  cuda::std::uint32_t words[codec_t::words_per_block];
  if constexpr (codec_t::words_per_block == 2) {
    const uint2 v = load_once(reinterpret_cast<const uint2*>(src));
    words[0] = v.x;
    words[1] = v.y;
  } else {
    const uint4 v = load_once(reinterpret_cast<const uint4*>(src));
    words[0] = v.x;
    words[1] = v.y;
    words[2] = v.z;
    words[3] = v.w;
  }
  float out[B];
  FP4FUSE_UNROLL
  for (int i = 0; i < B / 2; ++i) {
    const float2 pair = e2m1x2_decode_float2(static_cast<cuda::std::uint8_t>(words[i / 4] >> (8 * (i % 4))));
    if constexpr (Format::has_global_scale) {
      out[2 * i] = (pair.x * scale) * decode;
      out[2 * i + 1] = (pair.y * scale) * decode;
    } else {
      out[2 * i] = pair.x * scale;
      out[2 * i + 1] = pair.y * scale;
    }
  }
  store_floats(a.output + row * a.ld_output + col * B, out);
}

}  // namespace detail

/// Dequantizes NVFP4/MXFP4 to a row-major matrix on `stream`. Numerics: see the file comment;
/// bit-identical to `nvfp4_dequantize_block` / `mxfp4_dequantize_block` on the host followed by
/// the same rounding to `Out`. Validation before launch; on error nothing is written.
/// \code
/// fp4fuse::dequantize_args<__nv_bfloat16> a{packed, M, K, K / 2, scales, d_S, y, K};
/// auto r = fp4fuse::dequantize<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout_swizzled_128x4>(a, stream);
/// \endcode
template <class Format, class Layout, class Out>
result dequantize(const dequantize_args<Out>& a, cudaStream_t stream = nullptr) {
  static_assert(detail::is_supported_element<Out>, "dequantize: output must be __nv_bfloat16, __half or float");
  constexpr int B = Format::block_size;
  if (a.input == nullptr || a.scales == nullptr || a.output == nullptr ||
      (Format::has_global_scale && a.global_encode_scale == nullptr)) {
    return {status::null_pointer};
  }
  if (a.rows < 0 || a.cols <= 0) return {status::bad_shape};
  if (a.cols % B != 0) return {status::not_multiple_of_block};
  if (!detail::is_aligned(a.input, B / 2) || !detail::is_aligned(a.output, 16) ||
      (Format::has_global_scale && !detail::is_aligned(a.global_encode_scale, 4))) {
    return {status::misaligned_pointer};
  }
  if (a.ld_input < a.cols / 2 || a.ld_input % (B / 2) != 0 || a.ld_output < a.cols ||
      a.ld_output % detail::vec_elems<Out> != 0) {
    return {status::bad_leading_dimension};
  }
  if (a.rows == 0) return {};
  const cuda::std::int64_t blocks = a.cols / B;
  if (a.rows * blocks >= (cuda::std::int64_t(1) << 31) - 256) return {status::bad_shape};
  const auto total = static_cast<cuda::std::uint32_t>(a.rows * blocks);
  const Layout layout{a.rows, blocks};
  auto* kernel = &detail::dequantize_kernel<Format, Layout, Out>;
  if (result r = detail::check_kernel_image(kernel); !r) return r;
  kernel<<<(total + 255) / 256, 256, 0, stream>>>(a, layout, detail::fast_divmod(static_cast<cuda::std::uint32_t>(blocks)), total);
  return detail::launch_result();
}

}  // namespace fp4fuse
