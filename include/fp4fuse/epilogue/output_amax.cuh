#pragma once
/// \file epilogue/output_amax.cuh
/// The output amax of a fused epilogue, for delayed scaling: max |act(gate) * up| over the tensor,
/// reduced in the epilogue and combined in device memory, so the next step's global encode scale
/// (`nvfp4_global_encode_scale(*d_amax)`) needs no extra pass. Every adapter combines it for the
/// description's `output_amax::global` (epilogue/operation.cuh); with `sink::hand_back` it returns
/// the partials (`quantized_row::amax`, `mma_quantized_blocks::amax`) for the caller to combine here.
#include <cuda/ptx>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

namespace fp4fuse {

namespace detail {
/// `combine_output_amax`'s rule for one value into a host float: positive values only, the
/// maximum by their bits (the host twins').
inline void combine_output_amax_host(float* amax, float local) {
  if (local > 0.0f && float_bits(local) > float_bits(*amax)) *amax = local;
}
}  // namespace detail

/// Combines the calling warp's amaxes into `*amax` (device memory, initialised to +0 before the
/// GEMM): the warp's maximum (one `__reduce_max_sync` over the bits), then one `atomicMax` on the
/// float's bits by lane 0. Positive floats order as their bits, so the result is exactly the
/// maximum over every thread's positive `local` (+Inf counts). NaN, -0 and negative values
/// contribute nothing: as unsigned bits they would rank above every positive float and stick in
/// `*amax` (`quantized_row::amax` never returns them). Warp-collective: all 32 lanes call it,
/// converged; `inside == false` contributes nothing (rows or columns beyond the matrix).
/// \code
/// __device__ void amax(float* d_amax, float lane_partial, bool row_inside) {
///   // lane_partial: q.amax(valid_blocks) of a hand-back row, or q.amax(lane, rows_left, blocks_left) of hand-back fragments
///   fp4fuse::combine_output_amax(d_amax, lane_partial, row_inside);  // *d_amax: set to +0 before the GEMM
/// }
/// \endcode
FP4FUSE_DEVICE void combine_output_amax(float* amax, float local, bool inside = true) {
  const unsigned bits = inside && local > 0.0f ? detail::float_bits(local) : 0u;  // false for NaN, -0, < 0
  const unsigned warp_max = __reduce_max_sync(0xFFFFFFFFu, bits);
  if (cuda::ptx::get_sreg_laneid() == 0 && warp_max != 0u) atomicMax(reinterpret_cast<unsigned*>(amax), warp_max);
}

}  // namespace fp4fuse
