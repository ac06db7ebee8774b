#pragma once
// The kernels of kernels/quantize.cuh (the quantizing kernels: the tiled per-tensor kernel, the
// per-row kernels and the shared block loop) and their launch geometry; the launcher there
// validates the arguments first.
// Not part of the public API.
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

namespace fp4fuse {

namespace detail {

/// Scale blocks per thread of the tiled quantize kernel for inputs of `input_bytes_per_block`: two
/// (one for float MXFP4, 128 bytes a block), so that a thread has 64-128 bytes of loads in flight
/// and shares its index arithmetic, the codec's per-tensor constants and the load of S between its
/// blocks: the fastest of 1, 2 and 4 at the large shapes on the H200 (bench/RESULTS.md, "Standalone
/// kernels"; bench_kernels measures all three). An earlier two-blocks version was slower than one
/// because it held every block as 16 floats and its threads' blocks were not coalesced.
constexpr int blocks_per_thread_for(int input_bytes_per_block) {
  return input_bytes_per_block >= 128 ? 1 : 2;
}

/// Blocks per thread of the per-row kernels, which hold a whole row: 4 for 16-bit inputs, 2 for
/// float (NVFP4), so that one CTA of 256 threads holds 1024 or 512 blocks.
template <class T>
inline constexpr int row_blocks_per_thread = sizeof(T) == 2 ? 4 : 2;

/// Lanes of a warp: a warp owns 32 * P consecutive scale columns of one row (a "column tile"), lane
/// l the columns tile_start + l + 32 p, p < P, so that every load and store instruction of the warp
/// touches consecutive blocks (coalesced, as with one block per thread).
inline constexpr int lanes = 32;

/// Where a thread works: `row`, and its first scale column `col0`; its blocks are col0 + 32 p.
struct thread_position {
  cuda::std::uint32_t row, col0;
};

/// The thread's position: warps enumerate (row, column tile) pairs of the padded scale extent,
/// `tiles_per_row` tiles of 32 * P columns per row; false past the last warp's threads.
FP4FUSE_DEVICE bool locate(fast_div tiles_per_row, cuda::std::uint32_t total, int P, thread_position& pos) {
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return false;
  }
  const cuda::std::uint32_t warp = idx / lanes;
  pos.row = tiles_per_row(warp);
  pos.col0 = (warp - pos.row * tiles_per_row.divisor) * (lanes * P) + idx % lanes;
  return true;
}

/// Byte distance in the scale tensor between columns c and c + 32 of one row, for the layouts where
/// it does not depend on c (linear: 32; swizzled_128x4: 8 tiles of 512 bytes); 0 for other
/// layouts, whose offsets are computed block by block.
template <class Layout>
inline constexpr cuda::std::int64_t scale_stride_32 = cuda::std::is_same_v<Layout, scale_layout::linear>           ? 32
                                                      : cuda::std::is_same_v<Layout, scale_layout::swizzled_128x4> ? 8 * 512
                                                                                                                     : 0;

/// The body every quantizing kernel shares: the thread owns the P scale columns col0 + 32 p of one
/// row. `source.load(p)` fetches block p's inputs (all loads are issued before any store: the
/// stores may alias the input as far as the compiler knows, so loads issued after them would wait);
/// `source.quantize(codec, p)` returns the block quantized exactly as `codec.quantize` of its
/// values would (detail::quantize_block_fast). Padding scale positions get 0x00. `RowScales`: S is
/// `global_encode_scale[row]` (the second pass of per-row scales; padding rows, which only write
/// 0x00, read nothing) instead of `*global_encode_scale`.
template <int P, class Format, class Layout, class Source, bool RowScales = false>
FP4FUSE_DEVICE void quantize_owned_blocks(const quantized_matrix<Format, Layout>& out, thread_position pos,
                                          const float* global_encode_scale, Source& source) {
  using codec_t = block_codec<Format>;
  constexpr int B = Format::block_size;
  const Layout& layout = out.layout;
  // 32-bit column arithmetic: the launchers keep padded_cols below 2^31.
  const auto padded_cols = static_cast<cuda::std::uint32_t>(layout.padded_cols());
  bool valid[P];
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    const cuda::std::uint32_t col = pos.col0 + lanes * p;
    // Beyond padded_cols (the row's last tile) there is nothing to load or write.
    if constexpr (scale_stride_32<Layout> != 0) {
      // Their padding is row >= rows or column >= scale_cols (32-bit: the grid is).
      valid[p] = pos.row < static_cast<cuda::std::uint32_t>(layout.rows) && col < static_cast<cuda::std::uint32_t>(layout.scale_cols);
    } else {
      valid[p] = col < padded_cols && !layout.is_padding(pos.row, col);
    }
    if (valid[p]) {
      source.load(p);
    }
  }
  if (pos.col0 >= padded_cols) {
    return;
  }
  float S = 1.0f;
  if constexpr (RowScales) {
    S = pos.row < static_cast<cuda::std::uint32_t>(layout.rows) ? global_encode_scale[pos.row] : 1.0f;
  } else if constexpr (Format::has_global_scale) {
    S = *global_encode_scale;
  }
  const codec_t codec = make_block_codec<Format>(S);
  cuda::std::uint8_t* packed_out = out.packed + pos.row * out.ld_packed + pos.col0 * (B / 2);
  cuda::std::uint8_t* scale_base = out.scales + layout.offset(pos.row, pos.col0);
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    if (pos.col0 + lanes * p >= padded_cols) {
      break;
    }
    cuda::std::uint8_t* scale_out =
        scale_stride_32<Layout> != 0 ? scale_base + p * scale_stride_32<Layout> : out.scales + layout.offset(pos.row, pos.col0 + lanes * p);
    if (!valid[p]) {
      *scale_out = 0;
      continue;
    }
    const auto block = source.quantize(codec, p);
    *scale_out = block.scale;
    store_block_words<true>(packed_out + p * (lanes * B / 2), block.packed);
  }
}

/// quantize's source: B contiguous elements per block, kept as the loaded words until the block is
/// quantized.
template <class T, int B, int P, int Stride = lanes>
struct matrix_blocks {
  static constexpr int words = B * static_cast<int>(sizeof(T)) / 4;
  // A constructor rather than aggregate initialisation, which would zero the words on the hot path.
  FP4FUSE_DEVICE explicit matrix_blocks(const T* first_block) : first(first_block) {}
  const T* first;
  cuda::std::uint32_t raw[P][words];
  FP4FUSE_DEVICE void load(int p) {
    const uint4* v = reinterpret_cast<const uint4*>(first + p * (Stride * B));
    FP4FUSE_UNROLL
    for (int i = 0; i < words / 4; ++i) {
      const uint4 r = load_once(v + i);
      raw[p][4 * i] = r.x;
      raw[p][4 * i + 1] = r.y;
      raw[p][4 * i + 2] = r.z;
      raw[p][4 * i + 3] = r.w;
    }
  }
  FP4FUSE_DEVICE void values(int p, float (&x)[B]) const {
    constexpr int per_word = sizeof(T) == 2 ? 2 : 1;
    FP4FUSE_UNROLL
    for (int w = 0; w < words; ++w) {
      unpack_word(raw[p][w], T{}, &x[w * per_word]);
    }
  }
  /// The block's amax with NaN elements ignored (max_num): its part of a row amax.
  FP4FUSE_DEVICE float row_amax(int p) {
    float x[B];
    values(p, x);
    return magnitude_max<nan_policy::ignore>(x);
  }
  template <class Codec>
  FP4FUSE_DEVICE typename Codec::block_type quantize_after_amax(const Codec& codec, int p) const {
    return quantize(codec, p);
  }
  template <class Codec>
  FP4FUSE_DEVICE typename Codec::block_type quantize(const Codec& codec, int p) const {
    float x[B];
    values(p, x);
    if constexpr (sizeof(T) == 2) {
      // The amax from the magnitude bits (exact: every 16-bit value is exact in float); NaN or
      // Inf anywhere gives a non-finite amax.
      const cuda::std::uint32_t m = max_magnitude_bits16<words>(raw[p]);
      float amax;
      if constexpr (cuda::std::is_same_v<T, __nv_bfloat16>) {
        amax = bits_float(m << 16);
      } else {
        amax = __half2float(__ushort_as_half(static_cast<unsigned short>(m)));
      }
      return quantize_block_fast(codec, x, amax, [&](int w, const float*) { return sign_bytes_of_halves(&raw[p][4 * w]); });
    } else {
      return quantize_block_fast(codec, x, magnitude_max<nan_policy::propagate>(x), [](int, const float* y) { return sign_bytes_of_floats(y); });
    }
  }
};

/// `scales`: the tensor's S (one float), or with `RowScales` S_r per row (pass 2 of the two-pass
/// per-row quantize, after quantize_row_scale_kernel).
template <int P, class Format, class Layout, class T, bool RowScales = false>
__global__ void __launch_bounds__(256) quantize_kernel(matrix_view<const T> in, quantized_matrix<Format, Layout> out,
                                                       const float* scales, fast_div groups_per_row, cuda::std::uint32_t total) {
  thread_position pos;
  if (!locate(groups_per_row, total, P, pos)) {
    return;
  }
  matrix_blocks<T, Format::block_size, P> source(in.data + pos.row * in.ld + pos.col0 * Format::block_size);
  quantize_owned_blocks<P, Format, Layout, decltype(source), RowScales>(out, pos, scales, source);
}

/// Most threads per CTA of the per-row kernels: a CTA quantizes one row.
inline constexpr int row_threads = 256;

/// Scale columns a per-row kernel holds on chip for one row: P blocks per thread.
template <int P>
inline constexpr cuda::std::int64_t row_capacity = cuda::std::int64_t{row_threads} * P;

/// Threads per CTA for a row of `padded_cols` scale columns: the fewest of 64, 128, 256 that hold
/// it with P blocks each (smaller CTAs put more rows in flight per SM).
inline int row_threads_for(cuda::std::int64_t padded_cols, int P) { return padded_cols <= 64 * P ? 64 : padded_cols <= 128 * P ? 128 : 256; }

/// The row's encode scale nvfp4_global_encode_scale(max of the CTA's partial amaxes), returned to
/// every thread. Every partial is +0 or positive (or +Inf, NaN already ignored), so the maximum,
/// exact in any order, is the row's amax with NaN ignored: the one- and two-pass paths agree.
template <int Threads>
FP4FUSE_DEVICE float row_encode_scale(float partial_amax) {
  using reduce_t = cub::BlockReduce<float, Threads>;
  __shared__ typename reduce_t::TempStorage storage;
  __shared__ float row_amax;
  const float reduced = reduce_t(storage).Reduce(partial_amax, cuda::maximum<>{});
  if (threadIdx.x == 0) {
    row_amax = reduced;
  }
  __syncthreads();
  return nvfp4_global_encode_scale(row_amax);
}

/// The per-row body: the CTA owns row `row`, thread t the scale columns t + 256 p. Loads the
/// row's blocks, reduces the row amax (NaN ignored) across the CTA, writes
/// S = nvfp4_global_encode_scale(amax) to row_scales[row] and quantizes the blocks, still in
/// registers, with block_codec(S). Rows at or past `layout.rows` (swizzled padding) get 0x00
/// scales. Precondition: padded_cols <= 256 P (validated by the launchers).
template <int Threads, int P, class Format, class Layout, class Source>
FP4FUSE_DEVICE void quantize_row_blocks(const quantized_matrix<Format, Layout>& out, cuda::std::uint32_t row, float* row_scales,
                                        Source& source) {
  constexpr int B = Format::block_size;
  const Layout& layout = out.layout;
  const auto padded_cols = static_cast<cuda::std::uint32_t>(layout.padded_cols());
  const cuda::std::uint32_t col0 = threadIdx.x;
  bool valid[P];
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    const cuda::std::uint32_t col = col0 + Threads * p;
    valid[p] = col < padded_cols && !layout.is_padding(row, col);
    if (valid[p]) {
      source.load(p);
    }
  }
  float amax = 0.0f;
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    if (valid[p]) {
      amax = max_num(amax, source.row_amax(p));
    }
  }
  const float S = row_encode_scale<Threads>(amax);
  if (threadIdx.x == 0 && row < static_cast<cuda::std::uint64_t>(layout.rows)) {
    row_scales[row] = S;
  }
  const block_codec<Format> codec(S);
  cuda::std::uint8_t* packed_row = out.packed + row * out.ld_packed;
  FP4FUSE_UNROLL
  for (int p = 0; p < P; ++p) {
    const cuda::std::uint32_t col = col0 + Threads * p;
    if (col >= padded_cols) {
      break;
    }
    cuda::std::uint8_t* scale_out = out.scales + layout.offset(row, col);
    if (!valid[p]) {
      *scale_out = 0;
      continue;
    }
    const auto block = source.quantize_after_amax(codec, p);
    *scale_out = block.scale;
    store_block_words<true>(packed_row + col * (B / 2), block.packed);
  }
}

template <int Threads, int P, class Format, class Layout, class T>
__global__ void __launch_bounds__(Threads) quantize_per_row_kernel(matrix_view<const T> in, quantized_matrix<Format, Layout> out,
                                                                   float* row_scales) {
  const cuda::std::uint32_t row = blockIdx.x;
  matrix_blocks<T, Format::block_size, P, Threads> source(in.data + row * in.ld + threadIdx.x * Format::block_size);
  quantize_row_blocks<Threads, P>(out, row, row_scales, source);
}

/// The two-pass path of per-row scales, pass 1 (rows longer than one CTA holds): CTA r reads row r
/// with `make(first_col)`, a source whose blocks are first_col + Threads p, p < P (the one-pass
/// kernel's source type, so each block's partial amax is computed by the same code), and writes
/// S_r = row_encode_scale to row_scales[r]; pass 2 (`RowScales` kernels) quantizes with it.
template <int Threads, int P, class MakeSource>
FP4FUSE_DEVICE void row_scale_pass(cuda::std::uint32_t scale_cols, float* row_scales, const MakeSource& make) {
  require_ieee_float_math();
  float amax = 0.0f;
  for (cuda::std::uint32_t base = threadIdx.x; base < scale_cols; base += Threads * P) {
    auto source = make(base);
    FP4FUSE_UNROLL
    for (int p = 0; p < P; ++p) {
      if (base + Threads * p < scale_cols) {
        source.load(p);
      }
    }
    FP4FUSE_UNROLL
    for (int p = 0; p < P; ++p) {
      if (base + Threads * p < scale_cols) {
        amax = max_num(amax, source.row_amax(p));
      }
    }
  }
  const float S = row_encode_scale<Threads>(amax);
  if (threadIdx.x == 0) {
    row_scales[blockIdx.x] = S;
  }
}

template <int Threads, int P, int B, class T>
__global__ void __launch_bounds__(Threads) quantize_row_scale_kernel(matrix_view<const T> in, cuda::std::uint32_t scale_cols,
                                                                     float* row_scales) {
  const T* row = in.data + blockIdx.x * in.ld;
  row_scale_pass<Threads, P>(scale_cols, row_scales,
                             [&](cuda::std::uint32_t col) { return matrix_blocks<T, B, P, Threads>(row + col * B); });
}

/// Blocks per thread of the two-pass path's row-scale pass: four loads in flight per thread.
inline constexpr int row_scale_pass_blocks = 4;

/// The global-scale checks of a quantizing launcher (`c.scale`), and whether the one-pass per-row
/// kernel holds a row: true for `per_row` when the padded row fits `Capacity` scale columns (one
/// CTA), false for every other kind.
template <cuda::std::int64_t Capacity, class Layout, class Scale>
inline bool check_scale(argument_checker& c, const Layout& layout, const Scale& scale) {
  if constexpr (cuda::std::is_same_v<Scale, global_scale::per_row>) {
    c.scale(scale, layout.padded_rows());
    return layout.padded_cols() <= Capacity;
  } else {
    c.scale(scale);
    return false;
  }
}

/// Blocks per thread for a launch of `blocks` scale blocks: `wide` (blocks_per_thread_for) from
/// 2^20 blocks, one block per thread below, where more, thinner threads hide latency at least as
/// well (measured on the H200, bench/HISTORY.md, sixth session: [1024, 7168] 48.0% of copy
/// bandwidth with one, 47.5% with two, 43.6% with four).
inline int blocks_per_thread_at(cuda::std::int64_t blocks, int wide) { return blocks >= (cuda::std::int64_t{1} << 20) ? wide : 1; }

/// The grid of the quantizing kernels: a warp per tile of 32 * P scale columns of the layout's
/// padded extent (so every padding byte is written; `locate`); a failure in `c` past 31-bit
/// indexing.
template <class Layout>
inline void grid_extent(argument_checker& c, const Layout& layout, int P, cuda::std::uint32_t& tiles_per_row, cuda::std::uint32_t& total) {
  const cuda::std::int64_t tiles = cuda::ceil_div(layout.padded_cols(), cuda::std::int64_t{lanes} * P);
  c.grid(layout.padded_rows() * tiles * lanes, "padded rows x scale columns of the output layout, in tiles of 32 x blocks per thread");
  c.grid(layout.padded_cols(), "padded scale columns of the output layout");
  if (c) {
    tiles_per_row = static_cast<cuda::std::uint32_t>(tiles);
    total = static_cast<cuda::std::uint32_t>(layout.padded_rows() * tiles * lanes);
  }
}

}  // namespace detail

}  // namespace fp4fuse
