#pragma once
// The sm_90a ping-pong kernel's BF16 store through shared memory and TMA: each consumer warpgroup
// writes its 64 x 128 fragment with stmatrix into a 16 KiB staging buffer of its own (two 64 x 64
// boxes, 128-byte swizzled) and one thread stores it with two TMA boxes. The direct store issues
// 32 4-byte global stores per thread and fragment, which share the issue queue (MIO) with the other
// consumer's wgmma; staged, it is 8 stmatrix per thread and 2 TMA requests per fragment
// (bench/results/engine7.md: 0.94-0.96x the dense ping-pong's time at T = 4096). The launcher
// takes this path for a plain BF16 store (`store_bf16<no_bias>`) on a ping-pong plan whose output
// TMA can address (16-byte aligned rows); the bits are those of the direct store.
#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cuda/ptx>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp4fuse/gemm/tile_grid.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"

namespace fp4fuse::gemm::sm90 {
namespace detail {

/// The epilogue the ping-pong kernel stages (gemm_pingpong_staged_kernel): a plain BF16 store
/// known only by D's tensor map ([M, N] with stride ld, 64 x 64 boxes, 128-byte swizzle; built by
/// the launcher's detail::stage_store with make_tensor_map). A kernel parameter, __grid_constant__,
/// so that the map stays in parameter space, where TMA reads it.
struct staged_bf16_store {
  CUtensorMap map;  ///< D's tensor map
};

/// True for the epilogue the ping-pong kernel stages.
template <class Epilogue>
inline constexpr bool is_staged = std::is_same_v<Epilogue, staged_bf16_store>;

/// Bytes of one consumer's staging buffer: a 64 x 128 BF16 fragment.
inline constexpr std::size_t staging_buffer_bytes = 64 * 128 * 2;
/// Where the staging buffers start, from the aligned base of a ring whose barriers and hand-off
/// end at `ring_end` bytes: the next 1024-byte boundary (the 128-byte swizzle's period).
constexpr std::size_t staging_offset(std::size_t ring_end) { return (ring_end + 1023) / 1024 * 1024; }
/// The end of config Cfg's ring (ring.cuh: its stages, full and empty barriers, 16 bytes of
/// hand-off), from the ring's aligned base: config's shared memory less its 1024 bytes of slack.
template <class Cfg>
inline constexpr std::size_t ring_end = Cfg::smem_bytes - 1024;
/// The ping-pong kernel's dynamic shared memory: config's, or with `Staged` the ring, the two
/// consumers' staging buffers after it and the 1024 bytes of alignment slack.
template <class Cfg, bool Staged>
inline constexpr std::size_t pingpong_smem_bytes = Staged ? 1024 + staging_offset(ring_end<Cfg>) + 2 * staging_buffer_bytes : Cfg::smem_bytes;

/// Two floats as the BF16 pair a 4-byte store writes (the first at the lower address), rounded to
/// nearest even as store_bf16 rounds them.
__device__ __forceinline__ std::uint32_t bf16_pair(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  std::uint32_t bits;
  memcpy(&bits, &pair, sizeof bits);  // __nv_bfloat162 is not trivially copyable for bit_cast
  return bits;
}

/// One consumer warpgroup's 64 x 128 fragment (wgmma m64n128k16 order, `thread` its index in the
/// warpgroup, `consumer` its named barrier) stored to D at (row0, col0) through `buffer` (16 KiB,
/// 1024-byte aligned): waits until the buffer's previous TMA store has read it, writes the two
/// 64 x 64 boxes with stmatrix in TMA's 128-byte swizzle, fences them for the async proxy, and
/// thread 0 issues both TMA stores (rows and columns beyond D are clipped by TMA) as one bulk group.
__device__ __forceinline__ void staged_fragment_store(const CUtensorMap& map, const float (&acc)[64], index_t row0, index_t col0,
                                                      unsigned char* buffer, int thread, int consumer) {
  if (thread == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  warpgroup_sync(consumer);
  const int warp = thread / 32, lane = thread % 32;
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(buffer));
  const int matrix = lane / 8;  // the matrix whose row this thread addresses
#pragma unroll
  for (int pair = 0; pair < 8; ++pair) {
    // Matrices: 8-column groups 2 pair and 2 pair + 1, each in rows 0-7 and 8-15 of the warp's 16.
    const std::uint32_t r[4] = {bf16_pair(acc[8 * pair + 0], acc[8 * pair + 1]), bf16_pair(acc[8 * pair + 2], acc[8 * pair + 3]),
                                bf16_pair(acc[8 * pair + 4], acc[8 * pair + 5]), bf16_pair(acc[8 * pair + 6], acc[8 * pair + 7])};
    const int group = 2 * pair + (matrix >> 1);  // 16-byte column group 0..15
    const int row = 16 * warp + lane % 8 + 8 * (matrix & 1);
    const int box = group / 8, chunk = group % 8;
    stmatrix_x4(base + static_cast<std::uint32_t>(box * 8192 + row * 128 + ((chunk ^ (row & 7)) << 4)), r);
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  warpgroup_sync(consumer);
  if (thread == 0) {
#pragma unroll
    for (int box = 0; box < 2; ++box) {
      const std::int32_t coords[2] = {static_cast<std::int32_t>(col0 + 64 * box), static_cast<std::int32_t>(row0)};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &map, coords, buffer + box * 8192);
    }
    cuda::ptx::cp_async_bulk_commit_group();
  }
}

/// Waits (thread 0 of a consumer) until TMA has read its last staged fragment: the buffer must
/// outlive that read, so before the kernel ends (the global writes complete with the grid).
__device__ __forceinline__ void staged_stores_read(int thread) {
  if (thread == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
}

}  // namespace detail
}  // namespace fp4fuse::gemm::sm90
