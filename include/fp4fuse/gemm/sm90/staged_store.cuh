#pragma once
// The sm_90a GEMM's BF16 store through shared memory and TMA: each consumer warpgroup writes its
// 64-row fragment box by box (64 x 64 BF16, 8 KiB, 128-byte swizzled) with stmatrix into one of
// two box slots of its own, and one thread stores each box with TMA while the warpgroup writes the
// next into the other slot. The direct store issues 32 4-byte global stores per thread and 64 x 128
// fragment, which share the issue queue (MIO) with the other consumer's wgmma in the ping-pong
// kernel and hold the tensor cores idle in the cooperative one; staged, it is 4 stmatrix per thread
// and one TMA request per box (bench/results/engine7.md, engine8.md). The launcher takes this path
// for a plain BF16 store (`store_bf16<no_bias>`) on a ping-pong plan or a cooperative plan of
// 128-row tiles whose output TMA can address (16-byte aligned rows); the bits are those of the
// direct store.
#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>

#include <cuda/ptx>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/cmath.cuh"
#include "fp4fuse/epilogue/bulk_store.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/sm90/ring.cuh"

namespace fp4fuse::gemm::sm90 {
namespace detail {

/// The epilogue the GEMM kernels stage (gemm_staged_kernel, gemm_pingpong_staged_kernel): a
/// plain BF16 store known only by D's tensor map ([M, N] with stride ld, 64 x 64 boxes, 128-byte
/// swizzle; built by the launcher's detail::stage_store with make_tensor_map). A kernel parameter,
/// __grid_constant__, so that the map stays in parameter space, where TMA reads it.
struct staged_bf16_store {
  CUtensorMap map;  ///< D's tensor map
};

/// True for the epilogue the kernels stage.
template <class Epilogue>
inline constexpr bool is_staged = std::is_same_v<Epilogue, staged_bf16_store>;

/// Bytes of one 64 x 64 BF16 box, the unit of a TMA store.
inline constexpr std::size_t staging_box_bytes = 64 * 64 * 2;
/// Bytes of one consumer's staging buffer: two box slots, one written while the other is stored.
inline constexpr std::size_t staging_buffer_bytes = 2 * staging_box_bytes;
/// Where the staging buffers start, from the aligned base of a ring whose barriers and hand-off
/// end at `ring_end` bytes: the next 1024-byte boundary (the 128-byte swizzle's period).
constexpr std::size_t staging_offset(std::size_t ring_end) { return fp4fuse::detail::round_up(ring_end, std::size_t{1024}); }
/// The end of config Cfg's ring (ring.cuh: its stages, full and empty barriers, 16 bytes of
/// hand-off), from the ring's aligned base: config's shared memory less its 1024 bytes of slack.
template <class Cfg>
inline constexpr std::size_t ring_end = Cfg::smem_bytes - 1024;
/// A kernel's dynamic shared memory: config's, or with `Staged` the ring, the two consumers'
/// staging buffers after it and the 1024 bytes of alignment slack.
template <class Cfg, bool Staged>
inline constexpr std::size_t staged_smem_bytes = Staged ? 1024 + staging_offset(ring_end<Cfg>) + 2 * staging_buffer_bytes : Cfg::smem_bytes;

/// Consumer warpgroup `consumer`'s staging buffer (staging_buffer_bytes, 1024-byte aligned) in a
/// kernel whose ring is `r`: the buffers follow the ring at staging_offset.
template <class Cfg>
FP4FUSE_DEVICE unsigned char* staging_buffer(const ring<Cfg>& r, int consumer) {
  static_assert(staged_smem_bytes<Cfg, true> <= max_smem_per_cta, "staging_buffer: the ring and the staging buffers must fit in a CTA's shared memory");
  return r.a + staging_offset(ring_end<Cfg>) + consumer * staging_buffer_bytes;
}

/// Two floats as the BF16 pair a 4-byte store writes (the first at the lower address), rounded to
/// nearest even as store_bf16 rounds them.
FP4FUSE_DEVICE std::uint32_t bf16_pair(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  std::uint32_t bits;
  memcpy(&bits, &pair, sizeof bits);  // __nv_bfloat162 is not trivially copyable for bit_cast
  return bits;
}

/// One consumer warpgroup's 64 x `Columns` fragment (wgmma m64nColumnsk16 order: accumulators
/// 32 b .. 32 b + 31 are the columns of box b; `thread` its index in the warpgroup, `consumer` its
/// named barrier) stored to D at (row0, col0) through `buffer` (staging_buffer_bytes, 1024-byte
/// aligned), one 64 x 64 box at a time, box b in slot b % 2: thread 0 waits until at most one
/// earlier box store has still to read shared memory (the other slot's; where a fragment has an
/// odd count of boxes, its first box waits for all, the previous fragment having ended in slot
/// 0), the warpgroup writes the box with stmatrix in TMA's 128-byte
/// swizzle and fences it for the async proxy, and thread 0 issues its TMA store (rows and columns
/// beyond D are clipped by TMA) as one bulk group. Before the kernel ends thread 0 waits for the
/// last box's read (`fp4fuse::wait_staged_stores`): the buffer must outlive it.
template <int Columns>
FP4FUSE_DEVICE void staged_fragment_store(const CUtensorMap& map, const float (&acc)[Columns / 2], index_t row0, index_t col0,
                                                      unsigned char* buffer, int thread, int consumer) {
  static_assert(Columns % 64 == 0, "staged_fragment_store: fragments of whole 64-column boxes");
  constexpr int boxes = Columns / 64;
  const int warp = thread / 32, lane = thread % 32;
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(buffer));
  const int matrix = lane / 8;                              // the 8 x 8 matrix whose row this thread addresses
  const int row = 16 * warp + lane % 8 + 8 * (matrix & 1);  // rows 0-7 and 8-15 of the warp's 16
#pragma unroll
  for (int box = 0; box < boxes; ++box) {
    const std::uint32_t slot = base + static_cast<std::uint32_t>((box % 2) * staging_box_bytes);
    if (thread == 0) {
      // An odd count of boxes ends the previous fragment in slot 0: its first box waits for all.
      if (box == 0 && boxes % 2 == 1) {
        fp4fuse::wait_staged_stores();
      } else {
        cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});
      }
    }
    warpgroup_sync(consumer);
#pragma unroll
    for (int pair = 0; pair < 4; ++pair) {
      // Matrices: 8-column groups 2 pair and 2 pair + 1 of the box, each in rows 0-7 and 8-15.
      const float* a = acc + 32 * box + 8 * pair;
      const std::uint32_t r[4] = {bf16_pair(a[0], a[1]), bf16_pair(a[2], a[3]), bf16_pair(a[4], a[5]), bf16_pair(a[6], a[7])};
      const int chunk = 2 * pair + (matrix >> 1);  // 16-byte column group 0..7 of the box's row
      stmatrix_x4(slot + static_cast<std::uint32_t>(row * 128 + ((chunk ^ (row & 7)) << 4)), r);
    }
    fp4fuse::detail::bulk_store_fence();
    warpgroup_sync(consumer);
    if (thread == 0) {
      const std::int32_t coords[2] = {static_cast<std::int32_t>(col0 + 64 * box), static_cast<std::int32_t>(row0)};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &map, coords, buffer + (box % 2) * staging_box_bytes);
      fp4fuse::detail::bulk_store_commit();
    }
  }
}

}  // namespace detail
}  // namespace fp4fuse::gemm::sm90
