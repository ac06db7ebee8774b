#pragma once
/// \file cutlass/detail/library.hpp
/// The CUTLASS nodes' arguments and every call they make into fp4fuse, in one place: the nodes
/// (sm90_swiglu_quantize.hpp) decide which registers hold which rows and
/// columns of which tile; the functions here do the numerics, the stores and the padding.
#include <cuda/cmath>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cutlass/cutlass.h>

#include "fp4fuse/epilogue/output_amax.cuh"
#include "fp4fuse/epilogue/row.cuh"
#include "fp4fuse/epilogue/scale_padding.cuh"
#include "fp4fuse/epilogue/swiglu_quantize.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/mxfp4.cuh"
#include "fp4fuse/nvfp4.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse::cutlass_ext {

/// What the node needs from a kernel launch (host side): where the FP4 output goes and how it is
/// scaled. `Params` is the same struct.
template <class Op>
struct SwiGluQuantizeArguments {
  using Format = typename Op::format_type;
  /// The output [M, I]: packed bytes (ld_packed bytes per row) and scales in `Op::layout_type`.
  quantized_matrix<Format, typename Op::layout_type> out{};
  /// NVFP4: the global encode scale S in device memory; MXFP4: nullptr.
  const float* encode_scale = nullptr;
  /// The activation (its runtime parameters, e.g. `swiglu_clamped`'s limit, travel with it).
  typename Op::activation_type activation{};
  /// Per-column fp32 bias of the [M, 2I] accumulator in its gate/up interleaved column order
  /// (2I values), added before the activation; nullptr: none.
  const float* bias = nullptr;
  /// Output amax max |act(gate) * up| over the matrix (NaN ignored), atomically combined: set to +0
  /// before the GEMM; nullptr: not computed.
  float* amax = nullptr;
  /// Grouped GEMM: group e's S is encode_scale[e * encode_scale_group_stride] (0: one S for all).
  cuda::std::int64_t encode_scale_group_stride = 0;
  /// Grouped GEMM: group e's bias is bias + e * bias_group_stride (0: one bias for all).
  cuda::std::int64_t bias_group_stride = 0;
};

namespace detail {

/// Every call from the node into fp4fuse's epilogue, in one place. The node decides what is where
/// (which registers hold which rows and columns of which tile); these do the numerics.
template <class Op>
struct library {
  using Format = typename Op::format_type;
  using Layout = typename Op::layout_type;
  using codec_type = block_codec<Format>;
  /// What one GEMM problem (the dense GEMM, or one group of the grouped one) writes: a dense output.
  using dense_layout = cuda::std::conditional_t<scale_layout::is_grouped<Layout>, scale_layout::swizzled_128x4, Layout>;
  using dense_output = quantized_matrix<Format, dense_layout>;

  /// The output of group `group` (M rows): the whole output for a dense layout; for a grouped one
  /// the expert's rows and its block of the grouped scale tensor (`layout.expert(group)`), which
  /// must hold M rows (else the layout does not match the problem: trap).
  CUTLASS_DEVICE static dense_output group_output(const SwiGluQuantizeArguments<Op>& p, int group, cuda::std::int64_t M) {
    if constexpr (scale_layout::is_grouped<Layout>) {
      const auto block = p.out.layout.expert(group);
      if (block.layout.rows != M) __trap();  // the problem's M is not the expert's row count
      return dense_output{p.out.packed + p.out.layout.expert_offsets[group] * p.out.ld_packed, p.out.ld_packed,
                          p.out.scales + block.start_row * p.out.layout.padded_cols(), block.layout};
    } else {
      (void)group, (void)M;
      return p.out;
    }
  }

  /// The codec of group `group`'s global scale (MXFP4's ignores it).
  CUTLASS_DEVICE static codec_type codec(const SwiGluQuantizeArguments<Op>& p, int group) {
    return make_block_codec<Format>(p.encode_scale != nullptr ? p.encode_scale[group * p.encode_scale_group_stride] : 1.0f);
  }

  /// The library's `fused_epilogue` for group `group` of `out` (bias, output amax chosen at run
  /// time from `p`, each a compile-time type in the description), handed to `apply`.
  template <class Apply>
  CUTLASS_DEVICE static void with_epilogue(const SwiGluQuantizeArguments<Op>& p, const dense_output& out, int group, const codec_type& codec,
                                           Apply&& apply) {
    using GateUp = typename Op::gate_up_type;
    using Intermediate = typename Op::intermediate_type;
    const auto run = [&](auto bias, auto amax) {
      const fused_epilogue op{codec, sink::direct{out}, p.activation, GateUp{}, bias, amax, Intermediate{}};
      apply(op);
    };
    const auto with_amax = [&](auto bias) {
      if (p.amax != nullptr) {
        run(bias, output_amax::global{p.amax});
      } else {
        run(bias, output_amax::none{});
      }
    };
    if (p.bias != nullptr) {
      with_amax(column_bias{p.bias + group * p.bias_group_stride, 2 * out.cols()});
    } else {
      with_amax(no_bias{});
    }
  }

  /// One warp's 16-row tile `acc` (mma.sync m16n8 order) at `origin` of `out`: bias, activation,
  /// block quantization, the stores of packed bytes and scales, and (when `p.amax` is set) the
  /// output amax combined into `*p.amax` — all through the library's `fused_epilogue` +
  /// `mma_epilogue`. Warp-collective.
  template <int Tiles>
  CUTLASS_DEVICE static void quantize_warp_tile(const float (&acc)[Tiles][4], tile_origin origin, const SwiGluQuantizeArguments<Op>& p,
                                                const dense_output& out, int group, const codec_type& codec) {
    with_epilogue(p, out, group, codec, [&](const auto& op) { mma_epilogue(op, acc, origin); });
  }

  /// One thread's row segment `acc` (N consecutive gate/up columns of row origin.row from column
  /// origin.gate_up_col, as `tcgen05.ld` 32x32b leaves them) through the library's row form
  /// (`row_epilogue`): the same numerics and stores, no data exchanged between threads. With the
  /// output amax warp-collective (all 32 lanes, converged), else per thread.
  template <int N>
  CUTLASS_DEVICE static void quantize_row(const float (&acc)[N], tile_origin origin, const SwiGluQuantizeArguments<Op>& p, const dense_output& out,
                                          int group, const codec_type& codec) {
    with_epilogue(p, out, group, codec, [&](const auto& op) { row_epilogue(op, acc, origin); });
  }

  /// The scale padding beyond the CTA-tile grid that CTA tile (m_blk, n_blk) of TileM x TileN
  /// gate/up columns owns, in the [M, N] gate/up problem of `out` (all `threads` of the epilogue).
  template <int TileM, int TileN, class Index>
  CUTLASS_DEVICE static void pad_tile_beyond_grid(const dense_output& out, Index m_blk, Index n_blk, cuda::std::int64_t M, cuda::std::int64_t N,
                                                  int thread, int threads) {
    constexpr cuda::std::int64_t scale_tile_cols = TileN / (2 * Op::format_type::block_size);
    const cuda::std::int64_t m0 = static_cast<cuda::std::int64_t>(m_blk) * TileM;
    const cuda::std::int64_t c0 = static_cast<cuda::std::int64_t>(n_blk) * scale_tile_cols;
    const scale_tile_grid grid{{TileM, scale_tile_cols}, {cuda::ceil_div(M, cuda::std::int64_t{TileM}) * TileM, cuda::ceil_div(N, cuda::std::int64_t{TileN}) * scale_tile_cols}};
    write_scale_padding_beyond_grid(out, grid, scale_region{m0, c0, {TileM, scale_tile_cols}}, thread, threads);
  }

};

/// The first failed requirement of a problem for the node, as a sentence, or nullptr.
template <class Op>
inline const char* problem_error(long long M, long long N, long long L, const SwiGluQuantizeArguments<Op>& a) {
  using Format = typename Op::format_type;
  constexpr long long block = Format::block_size;
  if (L != 1) return "fp4fuse SwiGluQuantize: the batch count L must be 1 (one output matrix)";
  if (N % (2 * block) != 0) return "fp4fuse SwiGluQuantize: N = 2I must be a multiple of 2 * block size (32 NVFP4, 64 MXFP4), whole blocks of I";
  if (a.out.packed == nullptr || a.out.scales == nullptr) return "fp4fuse SwiGluQuantize: out.packed and out.scales must be device pointers";
  if constexpr (scale_layout::is_grouped<typename Op::layout_type>) {
    // Each group's M is checked against its expert's rows on the device (the offsets live there).
    if (a.out.rows() < M) return "fp4fuse SwiGluQuantize: out.layout.rows (all experts' rows) must be at least each group's M";
    if (a.out.layout.expert_offsets == nullptr) return "fp4fuse SwiGluQuantize: the grouped layout needs expert_offsets (device memory, experts + 1 entries)";
  } else {
    if (a.out.rows() != M) return "fp4fuse SwiGluQuantize: out.layout.rows must equal the GEMM's M";
  }
  if (2 * a.out.cols() != N) return "fp4fuse SwiGluQuantize: out.layout.scale_cols * block size must equal N / 2 (the GEMM's N is gate and up)";
  constexpr long long store = block / 2;  // one block's packed bytes: stored as one 8- (NVFP4) or 16-byte (MXFP4) vector
  if (a.out.ld_packed < N / 4 || a.out.ld_packed % store != 0) return "fp4fuse SwiGluQuantize: out.ld_packed must be >= I / 2 and a multiple of 8 (NVFP4) or 16 (MXFP4) bytes";
  if (reinterpret_cast<cuda::std::uintptr_t>(a.out.packed) % store != 0) return "fp4fuse SwiGluQuantize: out.packed must be 8- (NVFP4) or 16-byte (MXFP4) aligned";
  if (fp4fuse::detail::is_nvfp4<Format> && a.encode_scale == nullptr) return "fp4fuse SwiGluQuantize: NVFP4 needs the global encode scale S in device memory (encode_scale)";
  if (!fp4fuse::detail::is_nvfp4<Format> && a.encode_scale != nullptr) return "fp4fuse SwiGluQuantize: MXFP4 has no global scale; encode_scale must be nullptr";
  if (a.bias != nullptr && (reinterpret_cast<cuda::std::uintptr_t>(a.bias) % 8 != 0 || a.bias_group_stride % 2 != 0)) return "fp4fuse SwiGluQuantize: bias must be 8-byte aligned (the fragment reads two columns at once), and bias_group_stride even";
  return nullptr;
}

}  // namespace detail

}  // namespace fp4fuse::cutlass_ext
