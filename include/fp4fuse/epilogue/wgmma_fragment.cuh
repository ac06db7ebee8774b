#pragma once
/// \file epilogue/wgmma_fragment.cuh
/// Where each register of a thread's `wgmma.mma_async` m64nNk16 f32 accumulator fragment sits.
///
/// A warpgroup (4 consecutive warps, the first warp index a multiple of 4) owns the 64 x N tile D.
/// Warp w of the group owns rows 16w..16w+15, laid out as N/8 `mma.sync` m16n8 tiles side by side:
/// register d[i] of thread t (0..127 in the group) is register i % 4 of n8 tile i / 4.
/// \verbatim
///   row(t, i) = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i % 4) / 2)
///   col(t, i) = 8 * (i / 4) + 2 * (t % 4) + i % 2
/// \endverbatim
/// So each warp's slice of a wgmma fragment is exactly the `acc[N / 8][4]` of
/// `mma_m16n8_f32_fragment`, and the mma.sync epilogues apply to it unchanged.
#include "fp4fuse/config.cuh"
#include "fp4fuse/epilogue/mma_fragment.cuh"

namespace fp4fuse {

/// The register-to-element map of a `wgmma` m64nNk16 f32 accumulator fragment (`N` = 8..256).
/// \code
/// using frag = fp4fuse::wgmma_m64nN_f32_fragment<256>;
/// static_assert(frag::registers == 128);
/// static_assert(frag::row(37, 6) == 16 + 1 + 8 && frag::col(37, 6) == 8 + 2);
/// \endcode
template <int N>
struct wgmma_m64nN_f32_fragment {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma m64nNk16: N is a multiple of 8 in [8, 256]");
  /// Rows of the tile.
  static constexpr int rows = 64;
  /// Columns of the tile.
  static constexpr int cols = N;
  /// Accumulator registers per thread.
  static constexpr int registers = N / 2;
  /// Row of register `reg` (0..N/2-1) of thread `thread` (0..127 within the warpgroup).
  /// \code
  /// static_assert(fp4fuse::wgmma_m64nN_f32_fragment<256>::row(127, 127) == 63);  // the last thread's last register: row 63
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int row(int thread, int reg) {
    return 16 * (thread / 32) + mma_m16n8_f32_fragment::row(thread % 32, reg % 4);
  }
  /// Column of register `reg` (0..N/2-1) of thread `thread` (0..127 within the warpgroup).
  /// \code
  /// static_assert(fp4fuse::wgmma_m64nN_f32_fragment<256>::col(127, 127) == 255);  // ... and column 255
  /// \endcode
  FP4FUSE_HOST_DEVICE static constexpr int col(int thread, int reg) {
    return 8 * (reg / 4) + mma_m16n8_f32_fragment::col(thread % 32, reg % 4);
  }
  /// The thread's registers viewed as N/8 `mma.sync` m16n8 tiles, `tiles[n][r]` = d[4n + r]: the
  /// calling warp's 16 rows of the tile (rows 16 * warp_in_warpgroup() and on), in the order the
  /// mma.sync epilogues take.
  /// \param acc the thread's N/2 accumulators, in wgmma order
  /// \code
  /// float acc[128];  // wgmma m64n256k16
  /// const auto& tiles = fp4fuse::wgmma_m64nN_f32_fragment<256>::warp_tiles(acc);  // float[32][4]
  /// \endcode
  FP4FUSE_HOST_DEVICE static const float (&warp_tiles(const float (&acc)[registers]))[N / 8][4] {
    return reinterpret_cast<const float(&)[N / 8][4]>(acc);
  }
  /// The calling thread's warp within its warpgroup (0..3). A warpgroup is 4 consecutive warps of
  /// the block's linear thread index x + X * (y + Y * z), the first a multiple of 4, as `wgmma`
  /// groups them; any block shape works.
  /// \code
  /// __device__ int first_tile_row() { return 16 * fp4fuse::wgmma_m64nN_f32_fragment<256>::warp_in_warpgroup(); }  // 0, 16, 32 or 48
  /// \endcode
  FP4FUSE_DEVICE static int warp_in_warpgroup() {
    const unsigned linear_thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return static_cast<int>((linear_thread / 32) % 4);
  }
};

}  // namespace fp4fuse
