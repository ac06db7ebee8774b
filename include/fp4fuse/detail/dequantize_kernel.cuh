#pragma once
// The kernels of kernels/dequantize.cuh (the dequantization kernel) and their launch geometry; the
// launcher there validates the arguments first.
// Not part of the public API.
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

namespace fp4fuse {

namespace detail {

template <class Format, class Layout, class Out>
__global__ void __launch_bounds__(256) dequantize_kernel(quantized_matrix<Format, Layout, const cuda::std::uint8_t> in,
                                                         const float* global_encode_scale, matrix_view<Out> out, fast_div blocks_per_row,
                                                         cuda::std::uint32_t total) {
  using codec_t = block_codec<Format>;
  constexpr int B = Format::block_size;
  require_ieee_float_math();
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return;
  }
  const cuda::std::uint32_t row = blocks_per_row(idx);
  const cuda::std::uint32_t col = idx - row * blocks_per_row.divisor;
  const float decode = Format::has_global_scale ? 1.0f / *global_encode_scale : 1.0f;
  const float scale = codec_t::scale_value(in.scales[in.layout.offset(row, col)]);
  const cuda::std::uint8_t* src = in.packed + row * in.ld_packed + col * (B / 2);
  cuda::std::uint32_t words[Format::words_per_block];
  if constexpr (Format::words_per_block == 2) {
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
  float values[B];
  FP4FUSE_UNROLL
  for (int i = 0; i < B / 2; ++i) {
    const float2 pair = e2m1x2_decode_float2(static_cast<cuda::std::uint8_t>(words[i / 4] >> (8 * (i % 4))));
    if constexpr (Format::has_global_scale) {
      values[2 * i] = (pair.x * scale) * decode;
      values[2 * i + 1] = (pair.y * scale) * decode;
    } else {
      values[2 * i] = pair.x * scale;
      values[2 * i + 1] = pair.y * scale;
    }
  }
  store_floats(out.data + row * out.ld + col * B, values);
}

}  // namespace detail

}  // namespace fp4fuse
