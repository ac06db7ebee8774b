#pragma once
// The kernels of kernels/swiglu_quantize.cuh: swiglu_quantize's, on the quantizing loop of
// detail/quantize_kernels.cuh, and the compact output's. The launchers there validate the
// arguments first. Not part of the public API.
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
#include "fp4fuse/detail/quantize_kernels.cuh"
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
    h[j] = Intermediate::round(act.apply(gate[j], up[j]));
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
    return quantize_block_fast(codec, h, magnitude_max<nan_policy::propagate>(h), [](int, const float* y) { return sign_bytes_of_floats(y); });
  }
  /// Per-row scales: activates block p in place (gate[p] then holds act(gate) * up) and returns its
  /// amax with NaN ignored; `quantize_after_amax` then quantizes the stored values.
  FP4FUSE_DEVICE float row_amax(int p) {
    float h[B];
    activate<Intermediate>(act, gate[p], up[p], h);
    FP4FUSE_UNROLL
    for (int i = 0; i < B; ++i) {
      gate[p][i] = h[i];
    }
    return magnitude_max<nan_policy::ignore>(h);
  }
  template <class Codec>
  FP4FUSE_DEVICE typename Codec::block_type quantize_after_amax(const Codec& codec, int p) const {
    return quantize_block_fast(codec, gate[p], magnitude_max<nan_policy::propagate>(gate[p]), [](int, const float* y) { return sign_bytes_of_floats(y); });
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
  require_ieee_float_math();
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
inline void check_gate_up(argument_checker& c, const matrix_view<T>& gate_up, cuda::std::int64_t rows, cuda::std::int64_t I) {
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

}  // namespace fp4fuse
