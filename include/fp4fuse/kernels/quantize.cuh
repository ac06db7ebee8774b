#pragma once
/// \file kernels/quantize.cuh
/// Standalone quantization: [M, K] row-major bfloat16/half/float (leading dimension ld, in
/// elements) -> packed E2M1 [M, K/2] (leading dimension in bytes) + block scales in a scale layout.
///
/// One thread per block of 16 (NVFP4) or 32 (MXFP4) elements: 16-byte streaming loads, the block
/// amax in registers, one 8- or 16-byte store. The grid covers the scale layout's padded extent, so
/// every padding scale byte is written as 0x00 by the thread that owns it. The NVFP4 global encode
/// scale is read from device memory (the launch can be captured in a CUDA graph).
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/kernel_support.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

/// Arguments of `quantize`. Leading dimensions: `ld_input` in elements, `ld_output` in bytes.
template <class T>
struct quantize_args {
  const T* input = nullptr;                     ///< [rows, ld_input], 16-byte aligned
  cuda::std::int64_t rows = 0;                  ///< M
  cuda::std::int64_t cols = 0;                  ///< K, a multiple of the block size
  cuda::std::int64_t ld_input = 0;              ///< >= cols, a multiple of 16 bytes / sizeof(T)
  cuda::std::uint8_t* output = nullptr;         ///< [rows, ld_output] packed E2M1; 8-byte (NVFP4) / 16-byte (MXFP4) aligned
  cuda::std::int64_t ld_output = 0;             ///< bytes, >= cols / 2, a multiple of 8 (NVFP4) / 16 (MXFP4)
  cuda::std::uint8_t* scales = nullptr;         ///< layout.size_bytes() bytes
  const float* global_encode_scale = nullptr;  ///< device pointer to S (NVFP4 only; ignored for MXFP4)
};

namespace detail {

/// Scale blocks per thread. Measured on the H200 (bench/RESULTS.md): one NVFP4 block per thread
/// beats two (65% vs 48% of copy bandwidth on [16384, 7168]): two blocks need 72-96 registers,
/// and the lost occupancy costs more than the amortised index math saves. The macros are tuning
/// knobs for such experiments, not API.
#if !defined(FP4FUSE_NVFP4_BLOCKS_PER_THREAD)
#  define FP4FUSE_NVFP4_BLOCKS_PER_THREAD 1
#endif
/// Minimum resident CTAs per SM in the quantize and swiglu_quantize kernels' `__launch_bounds__`
/// (default 1); a tuning knob like FP4FUSE_NVFP4_BLOCKS_PER_THREAD, not API.
#if !defined(FP4FUSE_MIN_CTAS_PER_SM)
#  define FP4FUSE_MIN_CTAS_PER_SM 1
#endif
template <class Format>
inline constexpr int blocks_per_thread = Format::block_size == 16 ? FP4FUSE_NVFP4_BLOCKS_PER_THREAD : 1;

/// Where a thread works: `row`, first scale column `col0` of its group of `blocks_per_thread`.
struct thread_position {
  cuda::std::uint32_t row, col0;
};

/// The thread's position in the padded scale extent, grouped by `group` columns; false when the
/// thread has nothing to do.
FP4FUSE_DEVICE bool locate(fast_divmod groups_per_row, cuda::std::uint32_t total, int group, thread_position& pos) {
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return false;
  }
  pos.row = groups_per_row.div(idx);
  pos.col0 = (idx - pos.row * groups_per_row.divisor) * group;
  return true;
}

/// The body every quantizing kernel shares: the thread owns `blocks_per_thread` scale columns of
/// one row. `source.load(p, col)` fetches block p's inputs (all loads are issued before any store:
/// the stores may alias the input as far as the compiler knows, so loads issued after them would
/// wait, leaving one block in flight per thread); `source.values(p, x)` turns them into the floats
/// to quantize. Padding scale positions get 0x00.
template <class Format, class Layout, class Source>
FP4FUSE_DEVICE void quantize_owned_blocks(const Layout& layout, thread_position pos, cuda::std::uint8_t* scales,
                                          cuda::std::uint8_t* out_row, const float* global_encode_scale, Source& source) {
  using codec_t = block_codec<Format>;
  constexpr int B = codec_t::block_size;
  constexpr int P = blocks_per_thread<Format>;
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
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    const cuda::std::uint32_t col = pos.col0 + p;
    if (col >= layout.padded_cols()) {
      break;
    }
    cuda::std::uint8_t* scale_out = scales + layout.offset(pos.row, col);
    if (!valid[p]) {
      *scale_out = 0;
      continue;
    }
    float x[B];
    source.values(p, x);
    cuda::std::uint32_t words[codec_t::words_per_block];
    *scale_out = codec.quantize(x, words);
    store_words(out_row + col * (B / 2), words);
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
__global__ void __launch_bounds__(256, FP4FUSE_MIN_CTAS_PER_SM) quantize_kernel(quantize_args<T> a, Layout layout, fast_divmod groups_per_row,
                                                       cuda::std::uint32_t total) {
  thread_position pos;
  if (!locate(groups_per_row, total, blocks_per_thread<Format>, pos)) {
    return;
  }
  matrix_blocks<T, Format::block_size, blocks_per_thread<Format>> source(a.input + pos.row * a.ld_input);
  quantize_owned_blocks<Format>(layout, pos, a.scales, a.output + pos.row * a.ld_output, a.global_encode_scale, source);
}

/// Shared validation of the packed output and scales; `cols` is the quantized width.
template <class Format>
inline result validate_packed_output(const cuda::std::uint8_t* output, cuda::std::int64_t ld_output,
                                     const cuda::std::uint8_t* scales, const float* global_encode_scale,
                                     cuda::std::int64_t rows, cuda::std::int64_t cols) {
  constexpr int B = Format::block_size;
  constexpr std::size_t store_bytes = B / 2;
  if (output == nullptr || scales == nullptr || (Format::has_global_scale && global_encode_scale == nullptr)) {
    return {status::null_pointer};
  }
  if (rows < 0 || cols <= 0) {
    return {status::bad_shape};
  }
  if (cols % B != 0) {
    return {status::not_multiple_of_block};
  }
  if (!is_aligned(output, store_bytes) || (Format::has_global_scale && !is_aligned(global_encode_scale, 4))) {
    return {status::misaligned_pointer};
  }
  if (ld_output < cols / 2 || ld_output % static_cast<cuda::std::int64_t>(store_bytes) != 0) {
    return {status::bad_leading_dimension};
  }
  return {};
}

template <class T>
inline result validate_input(const T* input, cuda::std::int64_t ld_input, cuda::std::int64_t cols) {
  if (input == nullptr) {
    return {status::null_pointer};
  }
  if (!is_aligned(input, 16)) {
    return {status::misaligned_pointer};
  }
  if (ld_input < cols || ld_input % vec_elems<T> != 0) {
    return {status::bad_leading_dimension};
  }
  return {};
}

/// Grid extent: threads over the layout's padded scale positions in groups of `group` columns;
/// bad_shape if it exceeds 31-bit indexing.
template <class Layout>
inline result grid_extent(const Layout& layout, int group, cuda::std::uint32_t& groups_per_row, cuda::std::uint32_t& total) {
  const cuda::std::int64_t groups = (layout.padded_cols() + group - 1) / group;
  const cuda::std::int64_t t = layout.padded_rows() * groups;
  if (t >= (cuda::std::int64_t(1) << 31) - 256 || layout.padded_cols() >= (cuda::std::int64_t(1) << 31)) {
    return {status::bad_shape};
  }
  groups_per_row = static_cast<cuda::std::uint32_t>(groups);
  total = static_cast<cuda::std::uint32_t>(t);
  return {};
}

}  // namespace detail

/// Quantizes a row-major matrix to NVFP4 or MXFP4 on `stream`.
///
/// Numerics: each block exactly as `block_codec<Format>::quantize` on the host (bit-identical;
/// tests/kernels/quantize.cu). Scales go to `Layout{rows, cols / block}`; its padding is written
/// as 0x00. Validation happens before anything is launched; on error nothing is written.
/// \code
/// fp4fuse::quantize_args<__nv_bfloat16> a{x, M, K, K, packed, K / 2, scales, d_S};
/// auto r = fp4fuse::quantize<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout_swizzled_128x4>(a, stream);
/// if (!r) std::fprintf(stderr, "%s\n", r.message());
/// \endcode
template <class Format, class Layout, class T>
result quantize(const quantize_args<T>& a, cudaStream_t stream = nullptr) {
  static_assert(detail::is_supported_element<T>, "quantize: input must be __nv_bfloat16, __half or float");
  if (result r = detail::validate_input(a.input, a.ld_input, a.cols); !r) return r;
  if (result r = detail::validate_packed_output<Format>(a.output, a.ld_output, a.scales, a.global_encode_scale, a.rows, a.cols); !r) return r;
  if (a.rows == 0) {
    return {};
  }
  const Layout layout{a.rows, a.cols / Format::block_size};
  cuda::std::uint32_t groups_per_row = 0, total = 0;
  if (result r = detail::grid_extent(layout, detail::blocks_per_thread<Format>, groups_per_row, total); !r) return r;
  auto* kernel = &detail::quantize_kernel<Format, Layout, T>;
  if (result r = detail::check_kernel_image(kernel); !r) return r;
  kernel<<<(total + 255) / 256, 256, 0, stream>>>(a, layout, detail::fast_divmod(groups_per_row), total);
  return detail::launch_result();
}

}  // namespace fp4fuse
