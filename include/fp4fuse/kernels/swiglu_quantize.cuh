#pragma once
/// \file kernels/swiglu_quantize.cuh
/// Standalone gated activation + quantization: [M, 2I] gate/up (bfloat16/half/float) ->
/// act(gate) * up as NVFP4/MXFP4 [M, I/2] + scales, or as compact bfloat16/half/float [M, I].
///
/// One thread per output block: the gate and up runs of the block are loaded with 16-byte
/// streaming loads (for interleaved layouts with granules smaller than the block, one contiguous
/// window that registers de-interleave), the activation runs in fp32, and the block is quantized
/// in registers. `intermediate::bf16` rounds act*up to bfloat16 before quantizing, bit for bit
/// what a BF16 SwiGLU kernel followed by `quantize` produces (the peers' fused kernels do this);
/// `intermediate::fp32` (the default) quantizes the fp32 product.
#include "fp4fuse/activation.cuh"
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/kernel_support.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/kernels/quantize.cuh"
#include "fp4fuse/scale_layout.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse {

namespace intermediate {
/// Quantize act(gate) * up straight from fp32 (the default, more accurate).
struct fp32 {};
/// Round act(gate) * up to bfloat16 first (bit parity with BF16 SwiGLU + quantize pipelines).
struct bf16 {};
}  // namespace intermediate

/// Arguments of `swiglu_quantize` and `swiglu`. `cols` is I (the output width); the input row
/// holds 2I gate/up columns. Leading dimensions: input in elements, output in bytes for packed
/// FP4 and in elements for the compact `swiglu` output.
template <class T>
struct swiglu_args {
  const T* input = nullptr;                    ///< [rows, ld_input] gate/up, 16-byte aligned
  cuda::std::int64_t rows = 0;                 ///< M
  cuda::std::int64_t cols = 0;                 ///< I, a multiple of the block size (16 for compact output)
  cuda::std::int64_t ld_input = 0;             ///< >= 2I, a multiple of 16 bytes / sizeof(T)
  void* output = nullptr;                      ///< packed E2M1 [rows, ld_output bytes], or compact [rows, ld_output elements]
  /// Output leading dimension: bytes for packed FP4 (>= I/2, a multiple of 8 NVFP4 / 16 MXFP4),
  /// elements for `swiglu` (>= I, a multiple of 16 bytes / sizeof(Out)).
  cuda::std::int64_t ld_output = 0;
  cuda::std::uint8_t* scales = nullptr;        ///< quantizing variants only
  const float* global_encode_scale = nullptr;  ///< NVFP4 only
};

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

/// swiglu_quantize's source: the gate and up runs of each block, activated on demand.
template <class GateUp, class Activation, class Intermediate, class T, int B, int P>
struct gate_up_blocks {
  // Not an aggregate: aggregate initialisation would zero gate and up on the hot path.
  FP4FUSE_DEVICE gate_up_blocks(const T* row_start, cuda::std::int64_t cols, const Activation& activation)
      : row(row_start), I(cols), act(activation) {}
  const T* row;
  cuda::std::int64_t I;
  const Activation& act;
  float gate[P][B], up[P][B];
  FP4FUSE_DEVICE void load(int p, cuda::std::uint32_t col) {
    load_gate_up<GateUp>(row, static_cast<cuda::std::int64_t>(col) * B, I, gate[p], up[p]);
  }
  FP4FUSE_DEVICE void values(int p, float (&h)[B]) const { activate<Intermediate>(act, gate[p], up[p], h); }
};

template <class Format, class Layout, class GateUp, class Activation, class Intermediate, class T>
__global__ void __launch_bounds__(256, FP4FUSE_MIN_CTAS_PER_SM) swiglu_quantize_kernel(swiglu_args<T> a, Layout layout, Activation act,
                                                              fast_divmod groups_per_row, cuda::std::uint32_t total) {
  thread_position pos;
  if (!locate(groups_per_row, total, blocks_per_thread<Format>, pos)) {
    return;
  }
  gate_up_blocks<GateUp, Activation, Intermediate, T, Format::block_size, blocks_per_thread<Format>> source(
      a.input + pos.row * a.ld_input, a.cols, act);
  quantize_owned_blocks<Format>(layout, pos, a.scales, static_cast<cuda::std::uint8_t*>(a.output) + pos.row * a.ld_output,
                                a.global_encode_scale, source);
}

template <class Out, class GateUp, class Activation, class T>
__global__ void __launch_bounds__(256) swiglu_kernel(swiglu_args<T> a, Activation act, fast_divmod chunks_per_row, cuda::std::uint32_t total) {
  constexpr int N = 16;
  const cuda::std::uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) {
    return;
  }
  const cuda::std::uint32_t row = chunks_per_row.div(idx);
  const cuda::std::uint32_t col = idx - row * chunks_per_row.divisor;
  float gate[N], up[N], h[N];
  load_gate_up<GateUp>(a.input + row * a.ld_input, static_cast<cuda::std::int64_t>(col) * N, a.cols, gate, up);
  activate<intermediate::fp32>(act, gate, up, h);
  store_floats(static_cast<Out*>(a.output) + row * a.ld_output + col * N, h);
}

template <class GateUp>
inline constexpr cuda::std::int64_t granule_of = 1;
template <int G>
inline constexpr cuda::std::int64_t granule_of<gate_up::interleaved<G>> = G;

template <class GateUp, class T>
inline result validate_gate_up_input(const swiglu_args<T>& a) {
  // Interleaved rows must consist of whole granules.
  if (a.cols > (cuda::std::int64_t(1) << 40) || a.cols % granule_of<GateUp> != 0) {
    return {status::bad_shape};
  }
  return validate_input(a.input, a.ld_input, 2 * a.cols);
}

}  // namespace detail

/// act(gate) * up quantized to NVFP4/MXFP4, on `stream`.
///
/// Template parameters: the format (`format::nvfp4<Recipe>`, `format::mxfp4<Recipe>`), the scale
/// layout, the gate/up layout (`gate_up::split_gate_first`, `split_up_first`, `interleaved<G>`),
/// the activation (`activation::silu`, `swiglu_clamped`, `gelu_tanh`; passed by value, so runtime
/// parameters such as alpha travel with it) and `intermediate::fp32` or `intermediate::bf16`.
/// Numerics: each block bit-identical to the host composition of `Activation::apply` and
/// `block_codec<Format>::quantize`. Validation as `quantize`; I must be a multiple of the block.
/// \code
/// fp4fuse::swiglu_args<__nv_bfloat16> a{gate_up, M, I, 2 * I, packed, I / 2, scales, d_S};
/// auto r = fp4fuse::swiglu_quantize<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout_swizzled_128x4,
///                                   fp4fuse::gate_up::interleaved<8>>(a, fp4fuse::activation::silu{}, stream);
/// \endcode
template <class Format, class Layout, class GateUp, class Intermediate = intermediate::fp32, class Activation, class T>
result swiglu_quantize(const swiglu_args<T>& a, Activation act, cudaStream_t stream = nullptr) {
  static_assert(detail::is_supported_element<T>, "swiglu_quantize: input must be __nv_bfloat16, __half or float");
  if (result r = detail::validate_gate_up_input<GateUp>(a); !r) return r;
  auto* out = static_cast<cuda::std::uint8_t*>(a.output);
  if (result r = detail::validate_packed_output<Format>(out, a.ld_output, a.scales, a.global_encode_scale, a.rows, a.cols); !r) return r;
  if (a.rows == 0) {
    return {};
  }
  const Layout layout{a.rows, a.cols / Format::block_size};
  cuda::std::uint32_t groups_per_row = 0, total = 0;
  if (result r = detail::grid_extent(layout, detail::blocks_per_thread<Format>, groups_per_row, total); !r) return r;
  auto* kernel = &detail::swiglu_quantize_kernel<Format, Layout, GateUp, Activation, Intermediate, T>;
  if (result r = detail::check_kernel_image(kernel); !r) return r;
  kernel<<<(total + 255) / 256, 256, 0, stream>>>(a, layout, act, detail::fast_divmod(groups_per_row), total);
  return detail::launch_result();
}

/// act(gate) * up as a compact [M, I] matrix of `Out` (bfloat16, half or float; rounded to nearest
/// even from fp32), on `stream`. I must be a multiple of 16; `ld_output` is in elements and a
/// multiple of 16 bytes / sizeof(Out); the output pointer 16-byte aligned.
/// \code
/// fp4fuse::swiglu_args<__nv_bfloat16> a{gate_up, M, I, 2 * I, h, I};
/// auto r = fp4fuse::swiglu<__nv_bfloat16, fp4fuse::gate_up::split_gate_first>(a, fp4fuse::activation::silu{});
/// \endcode
template <class Out, class GateUp, class Activation, class T>
result swiglu(const swiglu_args<T>& a, Activation act, cudaStream_t stream = nullptr) {
  static_assert(detail::is_supported_element<T> && detail::is_supported_element<Out>,
                "swiglu: element types must be __nv_bfloat16, __half or float");
  if (result r = detail::validate_gate_up_input<GateUp>(a); !r) return r;
  if (a.output == nullptr) return {status::null_pointer};
  if (a.rows < 0 || a.cols <= 0) return {status::bad_shape};
  if (a.cols % 16 != 0) return {status::not_multiple_of_block};
  if (!detail::is_aligned(a.output, 16)) return {status::misaligned_pointer};
  if (a.ld_output < a.cols || a.ld_output % detail::vec_elems<Out> != 0) return {status::bad_leading_dimension};
  if (a.rows == 0) return {};
  const cuda::std::int64_t chunks = a.cols / 16;
  if (a.rows * chunks >= (cuda::std::int64_t(1) << 31) - 256) return {status::bad_shape};
  const auto total = static_cast<cuda::std::uint32_t>(a.rows * chunks);
  auto* kernel = &detail::swiglu_kernel<Out, GateUp, Activation, T>;
  if (result r = detail::check_kernel_image(kernel); !r) return r;
  kernel<<<(total + 255) / 256, 256, 0, stream>>>(a, act, detail::fast_divmod(static_cast<cuda::std::uint32_t>(chunks)), total);
  return detail::launch_result();
}

}  // namespace fp4fuse
