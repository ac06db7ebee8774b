#pragma once
/// \file kernels/quantize.cuh
/// Standalone quantization: [M, K] row-major bfloat16/half/float (leading dimension ld, in
/// elements) -> packed E2M1 [M, K/2] (leading dimension in bytes) + block scales in a scale layout.
///
/// One thread per block of 16 (NVFP4) or 32 (MXFP4) elements: 16-byte streaming loads, the block
/// amax in registers, one 8- or 16-byte store. The grid covers the scale layout's padded extent, so
/// every padding scale byte is written as 0x00 by the thread that owns it. The NVFP4 global encode
/// scale is read from device memory (the launch can be captured in a CUDA graph).
#include <cuda/cmath>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/kernel_support.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

namespace detail {

/// Scale blocks per thread. Measured on the H200 (bench/HISTORY.md, first session): one NVFP4 block
/// per thread beats two (65% vs 48% of copy bandwidth on [16384, 7168]): two blocks need 72-96
/// registers, and the lost occupancy costs more than the amortised index math saves.
template <class Format>
inline constexpr int blocks_per_thread = 1;

/// Where a thread works: `row`, first scale column `col0` of its group of `blocks_per_thread`.
struct thread_position {
  cuda::std::uint32_t row, col0;
};

/// The thread's position in the padded scale extent, grouped by `group` columns; false when the
/// thread has nothing to do.
FP4FUSE_DEVICE bool locate(fast_div groups_per_row, cuda::std::uint32_t total, int group, thread_position& pos) {
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return false;
  }
  pos.row = groups_per_row(idx);
  pos.col0 = (idx - pos.row * groups_per_row.divisor) * group;
  return true;
}

/// The body every quantizing kernel shares: the thread owns `blocks_per_thread` scale columns of
/// one row. `source.load(p, col)` fetches block p's inputs (all loads are issued before any store:
/// the stores may alias the input as far as the compiler knows, so loads issued after them would
/// wait, leaving one block in flight per thread); `source.values(p, x)` turns them into the floats
/// to quantize. Padding scale positions get 0x00.
template <class Format, class Layout, class Source>
FP4FUSE_DEVICE void quantize_owned_blocks(const quantized_matrix<Format, Layout>& out, thread_position pos,
                                          const float* global_encode_scale, Source& source) {
  using codec_t = block_codec<Format>;
  constexpr int B = Format::block_size;
  constexpr int P = blocks_per_thread<Format>;
  const Layout& layout = out.layout;
  bool valid[P];
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    // Beyond padded_cols (odd column count, linear layout) there is nothing to load or write.
    valid[p] = pos.col0 + p < layout.padded_cols() && !layout.is_padding(pos.row, pos.col0 + p);
    if (valid[p]) {
      source.load(p, pos.col0 + p);
    }
  }
  const codec_t codec(Format::has_global_scale ? *global_encode_scale : 1.0f);
  cuda::std::uint8_t* out_row = out.packed + pos.row * out.ld_packed;
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    const cuda::std::uint32_t col = pos.col0 + p;
    if (col >= layout.padded_cols()) {
      break;
    }
    cuda::std::uint8_t* scale_out = out.scales + layout.offset(pos.row, col);
    if (!valid[p]) {
      *scale_out = 0;
      continue;
    }
    float x[B];
    source.values(p, x);
    const auto block = codec.quantize(x);
    *scale_out = block.scale;
    store_words(out_row + col * (B / 2), block.packed);
  }
}

/// quantize's source: B contiguous elements per block, converted to float.
template <class T, int B, int P>
struct matrix_blocks {
  // A constructor rather than aggregate initialisation, which would zero x on the hot path.
  FP4FUSE_DEVICE explicit matrix_blocks(const T* row_start) : row(row_start) {}
  const T* row;
  float x[P][B];
  FP4FUSE_DEVICE void load(int p, cuda::std::uint32_t col) { load_floats(row + col * B, x[p]); }
  FP4FUSE_DEVICE void values(int p, float (&out)[B]) const {
    FP4FUSE_UNROLL
    for (int i = 0; i < B; ++i) {
      out[i] = x[p][i];
    }
  }
};

template <class Format, class Layout, class T>
__global__ void __launch_bounds__(256) quantize_kernel(matrix_view<const T> in, quantized_matrix<Format, Layout> out,
                                                       const float* global_encode_scale, fast_div groups_per_row,
                                                       cuda::std::uint32_t total) {
  thread_position pos;
  if (!locate(groups_per_row, total, blocks_per_thread<Format>, pos)) {
    return;
  }
  matrix_blocks<T, Format::block_size, blocks_per_thread<Format>> source(in.data + pos.row * in.ld);
  quantize_owned_blocks(out, pos, global_encode_scale, source);
}

/// The grid of the quantizing kernels: one thread per `group` scale columns of the layout's padded
/// extent (so every padding byte is written); a failure in `c` past 31-bit indexing.
template <class Layout>
inline void grid_extent(checker& c, const Layout& layout, int group, cuda::std::uint32_t& groups_per_row, cuda::std::uint32_t& total) {
  const cuda::std::int64_t groups = cuda::ceil_div(layout.padded_cols(), cuda::std::int64_t{group});
  c.grid(layout.padded_rows() * groups, "padded rows x scale columns of the output layout");
  c.grid(layout.padded_cols(), "padded scale columns of the output layout");
  if (c) {
    groups_per_row = static_cast<cuda::std::uint32_t>(groups);
    total = static_cast<cuda::std::uint32_t>(layout.padded_rows() * groups);
  }
}

}  // namespace detail

/// Quantizes a row-major [M, K] matrix to NVFP4 or MXFP4 on `stream`.
///
/// Numerics: each block exactly as `block_codec<Format>::quantize` on the host (bit-identical;
/// tests/kernels/quantize.cu). Scales go to `out.layout` (built for {M, K / block}); its padding is
/// written as 0x00. Requirements: `in` [M, K] bf16/half/float, 16-byte aligned, K a multiple of the
/// block size, `in.ld` a whole number of 16-byte vectors; `out` of the same shape; NVFP4 needs S in
/// device memory (`global_encode_scale`), MXFP4 takes nullptr. Everything is validated before any
/// CUDA call; on error nothing is launched or written and the result names the argument.
/// \code
/// using F = fp4fuse::format::nvfp4<>;
/// using L = fp4fuse::scale_layout::swizzled_128x4;
/// const fp4fuse::matrix_view<const __nv_bfloat16> in{x, M, K, K};
/// const fp4fuse::quantized_matrix<F, L> out{packed, K / 2, scales, L{M, K / 16}};
/// if (const auto r = fp4fuse::quantize(in, out, d_S, stream); !r) std::fprintf(stderr, "%s\n", r.message());
/// \endcode
template <class T, class Format, class Layout>
result quantize(const matrix_view<T>& in, const quantized_matrix<Format, Layout>& out, const float* global_encode_scale,
                cudaStream_t stream = nullptr) {
  using E = cuda::std::remove_const_t<T>;
  static_assert(detail::is_supported_element<E>, "fp4fuse::quantize: the input must be __nv_bfloat16, __half or float");
  static_assert(!scale_layout::is_grouped<Layout>,
                "fp4fuse::quantize: a grouped (MoE) scale layout is written per expert; pass each expert's block (layout.expert(e)) or use a grouped kernel");
  detail::checker c("fp4fuse::quantize");
  c.matrix(in, "in", 1, Format::block_size, Format::block_size == 16 ? "the NVFP4 block size" : "the MXFP4 block size");
  c.quantized(out, "out");
  c.template global_scale<Format>(global_encode_scale);
  c.require(in.rows == out.rows() && in.cols == out.cols(), status::bad_shape,
            "in is [%lld, %lld] but out (its layout) is [%lld, %lld]", static_cast<long long>(in.rows), static_cast<long long>(in.cols),
            static_cast<long long>(out.rows()), static_cast<long long>(out.cols()));
  cuda::std::uint32_t groups_per_row = 0, total = 0;
  if (c) detail::grid_extent(c, out.layout, detail::blocks_per_thread<Format>, groups_per_row, total);
  if (!c) return c.outcome();
  if (in.rows == 0) return {};
  return detail::launch(&detail::quantize_kernel<Format, Layout, E>, cuda::ceil_div(total, 256u), 256, stream, "fp4fuse::quantize",
                        matrix_view<const E>{in.data, in.rows, in.cols, in.ld}, out, global_encode_scale,
                        detail::fast_div(groups_per_row), total);
}

}  // namespace fp4fuse
