#pragma once
/// \file epilogue/row_store.cuh
/// Sinks for the row form's `quantized_row` (epilogue/row.cuh), and the output amax:
/// - `store_quantized_row`: direct global stores (one vector store per block, its scale byte);
/// - `store_quantized_row_staged`: the packed bytes staged in shared memory and written by one TMA
///   bulk copy (`cp.async.bulk.global.shared::cta`, sm_90+) per row segment, the scales stored
///   directly; `wait_staged_stores` before the staging memory is reused or the CTA exits;
/// - `combine_output_amax` (epilogue/output_amax.cuh, included): the output amax;
/// - `swiglu_quantize_row_epilogue`: activation, quantization, bias, direct stores and amax in one call.
/// Bounds and padding are those of the fragment epilogues: packed bytes only for rows < out.rows()
/// and blocks < out.layout.scale_cols; scale bytes for rows < padded_rows() and blocks <
/// padded_cols(), 0x00 in the padding.
#include <cuda/ptx>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/epilogue/output_amax.cuh"
#include "fp4fuse/epilogue/row.cuh"
#include "fp4fuse/epilogue/tile_origin.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse {

namespace detail {
/// The scale bytes of a segment: the code inside the matrix, 0x00 in the layout's padding.
template <class Format, class Layout, int Blocks>
FP4FUSE_HOST_DEVICE void store_row_scales(const quantized_matrix<Format, Layout>& out, cuda::std::int64_t row, cuda::std::int64_t block0,
                                     const quantized_row<Format, Blocks>& q) {
  if (row >= out.layout.padded_rows()) return;
  FP4FUSE_UNROLL
  for (int b = 0; b < Blocks; ++b) {
    const cuda::std::int64_t k = block0 + b;
    if (k < out.layout.padded_cols()) {
      out.scales[out.layout.offset(row, k)] = row < out.rows() && k < out.layout.scale_cols ? q.blocks[b].scale : cuda::std::uint8_t{0};
    }
  }
}

/// The first block column of a segment from its first gate/up column.
template <class Format>
FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t first_block_col(tile_origin origin) {
  return origin.gate_up_col / (2 * Format::block_size);
}
}  // namespace detail

/// Direct global stores of a thread's row segment: block b of `q` to output row `origin.row`,
/// block column origin.gate_up_col / (2 * block_size) + b. Per thread (no collectives); also on
/// the host, into host memory (the row form's host twin).
/// \param out    the quantized output (non-grouped layout)
/// \param origin the segment's row and first gate/up column (a multiple of 2 * block_size)
/// \param q      the segment (`swiglu_quantize_row`)
/// Preconditions: packed rows aligned to the block's bytes (ld_packed a multiple of 8 for NVFP4,
/// 16 for MXFP4).
/// \code
/// __device__ void store(const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out,
///                       const fp4fuse::quantized_row<fp4fuse::format::nvfp4<>, 2>& q, std::int64_t row, std::int64_t gate_up_col0) {
///   fp4fuse::store_quantized_row(out, {row, gate_up_col0}, q);
/// }
/// \endcode
template <class Format, class Layout, int Blocks>
FP4FUSE_HOST_DEVICE void store_quantized_row(const quantized_matrix<Format, Layout>& out, tile_origin origin,
                                        const quantized_row<Format, Blocks>& q) {
  static_assert(!scale_layout::is_grouped<Layout>, "store_quantized_row: a grouped (MoE) layout is written per expert (layout.expert(e))");
  constexpr int bytes = Format::block_size / 2;
  const cuda::std::int64_t block0 = detail::first_block_col<Format>(origin);
  if (origin.row < out.rows()) {
    cuda::std::uint8_t* dst = out.packed + origin.row * out.ld_packed + block0 * bytes;
    FP4FUSE_UNROLL
    for (int b = 0; b < Blocks; ++b) {
      if (block0 + b < out.layout.scale_cols) detail::store_block_words<false>(dst + b * bytes, q.blocks[b].packed);
    }
  }
  detail::store_row_scales(out, origin.row, block0, q);
}

/// The same through shared memory and a TMA bulk copy: the segment's packed bytes are written to
/// `staging` (this thread's Blocks * block_size / 2 bytes, 16-byte aligned, not shared with
/// another thread), made visible to the async proxy (`fence.proxy.async.shared::cta`) and copied to
/// the output row by `cp.async.bulk.global.shared::cta.bulk_group` (cuda::ptx) in whole 16-byte
/// units, an odd 8-byte NVFP4 block at the end of the matrix stored directly; scale bytes are
/// stored directly. Per thread (no barrier: each thread copies what it staged). Call
/// `wait_staged_stores()` before reusing `staging` or leaving the kernel. sm_90 and later; traps
/// elsewhere.
/// Preconditions: as `store_quantized_row`, and the packed row segment 16-byte aligned
/// (ld_packed and the segment's first byte multiples of 16).
/// \code
/// __device__ void staged(const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out,
///                        const fp4fuse::quantized_row<fp4fuse::format::nvfp4<>, 4>& q, std::int64_t row, std::int64_t gate_up_col0) {
///   __shared__ alignas(16) std::uint8_t staging[128][32];  // 128 threads x 4 NVFP4 blocks
///   fp4fuse::store_quantized_row_staged(out, {row, gate_up_col0}, q, staging[threadIdx.x % 128]);
///   fp4fuse::wait_staged_stores();
/// }
/// \endcode
template <class Format, class Layout, int Blocks>
FP4FUSE_DEVICE void store_quantized_row_staged(const quantized_matrix<Format, Layout>& out, tile_origin origin,
                                               const quantized_row<Format, Blocks>& q, void* staging) {
  static_assert(!scale_layout::is_grouped<Layout>, "store_quantized_row_staged: a grouped (MoE) layout is written per expert (layout.expert(e))");
#if FP4FUSE_ARCH_HAS_SM90
  constexpr int bytes = Format::block_size / 2;
  const cuda::std::int64_t block0 = detail::first_block_col<Format>(origin);
  if (origin.row < out.rows()) {
    auto* stage = static_cast<cuda::std::uint8_t*>(staging);
    FP4FUSE_UNROLL
    for (int b = 0; b < Blocks; ++b) detail::store_block_words<false>(stage + b * bytes, q.blocks[b].packed);
    const cuda::std::int64_t left = out.layout.scale_cols - block0;
    const int valid = left <= 0 ? 0 : (left < Blocks ? static_cast<int>(left) : Blocks);
    const int bulk = (valid * bytes) & ~15;  // whole 16-byte units
    cuda::std::uint8_t* dst = out.packed + origin.row * out.ld_packed + block0 * bytes;
    if (bulk > 0) {
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
      cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, dst, stage, static_cast<cuda::std::uint32_t>(bulk));
      cuda::ptx::cp_async_bulk_commit_group();
    }
    if constexpr (bytes == 8) {
      FP4FUSE_UNROLL
      for (int b = 0; b < Blocks; ++b) {  // the odd last block (b == valid - 1), without indexing registers at run time
        if (b == valid - 1 && valid * bytes != bulk) detail::store_block_words<false>(dst + bulk, q.blocks[b].packed);
      }
    }
  }
  detail::store_row_scales(out, origin.row, block0, q);
#else
  (void)out, (void)origin, (void)q, (void)staging;
  __trap();  // cp.async.bulk needs sm_90: never write nothing silently
#endif
}

/// Waits until the calling thread's bulk copies (`store_quantized_row_staged`) have read their
/// shared memory (`cp.async.bulk.wait_group.read 0`): the staging can then be reused, and the CTA
/// may exit. sm_90 and later; traps elsewhere.
/// \code
/// __device__ void before_exit() { fp4fuse::wait_staged_stores(); }
/// \endcode
FP4FUSE_DEVICE void wait_staged_stores() {
#if FP4FUSE_ARCH_HAS_SM90
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
#else
  __trap();
#endif
}

/// What `swiglu_quantize_row_epilogue` adds to the plain epilogue: a bias and the output amax.
struct row_epilogue_extras {
  /// Per-column bias of the segment's accumulator columns (`column_bias`; default none).
  column_bias bias = {};
  /// Device memory for the output amax (`combine_output_amax`; nullptr: not computed).
  float* amax = nullptr;
};

/// The row form in one call: `swiglu_quantize_row` on the thread's interleaved accumulator, then
/// `store_quantized_row`, and with `extras.amax` the output amax over the segment's blocks inside
/// the matrix (then warp-collective: all 32 lanes call it, converged). Otherwise per thread.
/// \param acc    N consecutive gate/up columns of one row (`tcgen05_32x32b_fragment<N>`)
/// \param origin the thread's row and the segment's first gate/up column (a multiple of 2 * block_size and of 2G)
/// \param act    the gated activation
/// \param codec  the format's codec
/// \param out    the quantized output
/// \param extras optional bias and amax
/// Numerics, bounds and padding: as `swiglu_quantize_row` and `store_quantized_row`.
/// \code
/// __device__ void epilogue(const float (&acc)[64], std::int64_t m0, std::int64_t n0, const float* d_S,
///                          const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out) {
///   // acc: tcgen05.ld 32x32b.x64 of a 128 x 64 gate/up slice at (m0, n0), after tcgen05.wait::ld
///   using frag = fp4fuse::tcgen05_32x32b_fragment<64>;
///   const fp4fuse::block_codec<fp4fuse::format::nvfp4<>> codec(*d_S);
///   fp4fuse::swiglu_quantize_row_epilogue<fp4fuse::gate_up::interleaved<8>>(acc, {m0 + frag::thread_row(), n0},
///                                                                           fp4fuse::activation::swiglu{}, codec, out);
/// }
/// \endcode
template <class GateUp, class Intermediate = intermediate::fp32, int N, class Activation, class CodecFormat, class Format, class Layout>
FP4FUSE_DEVICE void swiglu_quantize_row_epilogue(const float (&acc)[N], tile_origin origin, const Activation& act, const block_codec<CodecFormat>& codec,
                                                 const quantized_matrix<Format, Layout>& out, const row_epilogue_extras& extras = {}) {
  static_assert(cuda::std::is_same_v<CodecFormat, Format>,
                "swiglu_quantize_row_epilogue: the codec and the output must have the same format (format and recipe), e.g. block_codec<F> with quantized_matrix<F, L>");
  const auto q = swiglu_quantize_row<GateUp, Intermediate>(acc, act, codec, extras.bias);
  store_quantized_row(out, origin, q);
  if (extras.amax != nullptr) {
    const cuda::std::int64_t left = out.layout.scale_cols - detail::first_block_col<Format>(origin);
    const int valid = left <= 0 ? 0 : (left < N / 2 / Format::block_size ? static_cast<int>(left) : N / 2 / Format::block_size);
    combine_output_amax(extras.amax, q.amax(valid), origin.row < out.rows());
  }
}

}  // namespace fp4fuse
