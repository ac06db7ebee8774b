#pragma once
/// \file epilogues.cuh
/// The GEMM engine's dense epilogue bindings: the three epilogues of the MoE layer's first GEMM
/// (plus the plain BF16 store they share), as functors that both engines (sm90.cuh: wgmma;
/// mma_sync.cuh: mma.sync) call. The one place the engine calls the library's fused-epilogue API.
//
// Interface: `warp(acc, row0, col0)` with one warp's m16n8 fragments `float acc[Tiles][4]`
// (`fp4fuse::mma_m16n8_f32_fragment`), the warp tile's first output row and first gate/up
// column; and `warpgroup(acc, row0, col0)` with one thread's wgmma m64nNk16 fragment
// `float acc[N / 2]` (`fp4fuse::wgmma_m64nN_f32_fragment<N>`), row0 the warpgroup tile's row 0;
// optionally `prefetch()`, which the sm_90a GEMM calls once per CTA at kernel start to fetch what
// the epilogue will read; and `padding_beyond<N>(grid, row0, col0)`, called by the sm_90a GEMM
// for the part 64 x N at (row0, col0) of each tile (and by an idle consumer warpgroup for
// 64 x 32 tiles): it writes that part's share of the output's padding that the tile grid does not
// cover (the NVFP4 scales' 0x00, through the library's `write_scale_padding_beyond_grid`) and
// nothing else; empty for outputs without padding.
// Columns are those of the GEMM output D = X * W^T: gate/up interleaved in granules of 8.
// `with_bias<E>` adds a per-column bias to the accumulators before any of them (GPT-OSS).
#include <cuda_bf16.h>

#include <type_traits>
#include <utility>

#include "fp4fuse/fp4fuse.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"

namespace fp4fuse::gemm {

/// Forwards a wgmma fragment to the per-warp form: warp w of the group owns rows 16w..16w+15.
template <class Epilogue, int Registers>
__device__ __forceinline__ void warpgroup_as_warps(const Epilogue& epi, const float (&acc)[Registers], index_t row0,
                                                   index_t col0) {
  using frag = fp4fuse::wgmma_m64nN_f32_fragment<2 * Registers>;
  epi.warp(frag::warp_tiles(acc), row0 + 16 * frag::warp_in_warpgroup(), col0);
}

/// Flow 1 (and the plain GEMM): D as BF16 [M, N].
struct store_bf16 {
  fp4fuse::matrix_view<__nv_bfloat16> out;  ///< D [M, N]

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  template <int Tiles>
  __device__ __forceinline__ void warp(const float (&acc)[Tiles][4], index_t row0, index_t col0) const {
    using frag = fp4fuse::mma_m16n8_f32_fragment;
    const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
    for (int n = 0; n < Tiles; ++n) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const index_t row = row0 + frag::row(lane, 2 * half), col = col0 + 8 * n + frag::col(lane, 0);
        if (row < out.rows && col < out.cols) {  // cols is even and col is even: col + 1 < cols too
          *reinterpret_cast<__nv_bfloat162*>(out.data + row * out.ld + col) =
              __floats2bfloat162_rn(acc[n][2 * half], acc[n][2 * half + 1]);
        }
      }
    }
  }
  /// One thread's wgmma m64nNk16 fragment (`wgmma_m64nN_f32_fragment`), row0 the warpgroup tile's row 0.
  template <int Registers>
  __device__ __forceinline__ void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    warpgroup_as_warps(*this, acc, row0, col0);
  }
  /// Nothing: the output has no padding.
  template <int N>
  __device__ __forceinline__ void padding_beyond(const tile_grid&, index_t, index_t) const {}
};

/// Flow 2: the compact SwiGLU output act(gate) * up as BF16 [M, I] (I = N / 2).
template <class Activation>
struct swiglu_bf16 {
  fp4fuse::matrix_view<__nv_bfloat16> out;  ///< [M, N / 2]
  Activation act;                           ///< the activation of gate (fp4fuse::activation)

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  template <int Tiles>
  __device__ __forceinline__ void warp(const float (&acc)[Tiles][4], index_t row0, index_t col0) const {
    using frag = fp4fuse::mma_m16n8_f32_fragment;
    const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
    for (int g = 0; g < Tiles / 2; ++g) {  // n8 tile 2g is gate granule g, 2g + 1 its up granule
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const index_t row = row0 + frag::row(lane, 2 * half), col = col0 / 2 + 8 * g + frag::col(lane, 0);
        if (row < out.rows && col < out.cols) {
          const float h0 = act.apply(acc[2 * g][2 * half], acc[2 * g + 1][2 * half]);
          const float h1 = act.apply(acc[2 * g][2 * half + 1], acc[2 * g + 1][2 * half + 1]);
          *reinterpret_cast<__nv_bfloat162*>(out.data + row * out.ld + col) = __floats2bfloat162_rn(h0, h1);
        }
      }
    }
  }
  /// One thread's wgmma m64nNk16 fragment (`wgmma_m64nN_f32_fragment`), row0 the warpgroup tile's row 0.
  template <int Registers>
  __device__ __forceinline__ void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    warpgroup_as_warps(*this, acc, row0, col0);
  }
  /// Nothing: the output has no padding.
  template <int N>
  __device__ __forceinline__ void padding_beyond(const tile_grid&, index_t, index_t) const {}
};

/// Flow 3: SwiGLU -> NVFP4 straight from the accumulators (the library's fragment epilogue).
/// The global encode scale is static (calibrated), read from device memory as serving engines do.
template <class Activation, class Intermediate = fp4fuse::intermediate::fp32, class Recipe = fp4fuse::recipe::te_exact>
struct swiglu_nvfp4 {
  using format = fp4fuse::format::nvfp4<Recipe>;   ///< NVFP4 with `Recipe`
  using gate_up = fp4fuse::gate_up::interleaved<8>;  ///< W's gate/up rows interleaved by 8
  fp4fuse::quantized_matrix<format, fp4fuse::scale_layout::swizzled_128x4> out;  ///< packed [M, N / 4] bytes and 128x4 scales
  const float* global_encode_scale;  ///< S, device memory
  Activation act;                    ///< the activation of gate
  /// The scales' padding granule in output rows and gate/up columns (128 x 4 scale blocks).
  static constexpr index_t padding_rows = fp4fuse::scale_layout::swizzled_128x4::row_tile;  ///< 128 rows
  /// 4 scale columns of 32 gate/up columns each.
  static constexpr index_t padding_cols = fp4fuse::scale_layout::swizzled_128x4::col_tile * 2 * format::block_size;

  /// The library's fused-epilogue description this binding builds per call.
  using operation = fp4fuse::fused_epilogue<format, fp4fuse::sink::direct<format, fp4fuse::scale_layout::swizzled_128x4>, Activation, gate_up,
                                            fp4fuse::no_bias, fp4fuse::output_amax::none, Intermediate>;

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  template <int Tiles>
  __device__ __forceinline__ void warp(const float (&acc)[Tiles][4], index_t row0, index_t col0) const {
    fp4fuse::mma_epilogue(op(), acc, {row0, col0});
  }
  /// One thread's wgmma m64nNk16 fragment (`wgmma_m64nN_f32_fragment`), row0 the warpgroup tile's row 0.
  template <int Registers>
  __device__ __forceinline__ void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    fp4fuse::wgmma_epilogue(op(), acc, {row0, col0});
  }
  /// The library's description of this epilogue, its codec built from the global encode scale.
  __device__ __forceinline__ operation op() const { return {fp4fuse::block_codec<format>(*global_encode_scale), {out}, act}; }
  /// Brings the global encode scale into this SM's L1 at kernel start (`prefetch.global.L1`; no
  /// cuda::ptx wrapper), so the epilogue after the last MMA does not wait for a DRAM read of it.
  __device__ __forceinline__ void prefetch() const {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(__cvta_generic_to_global(global_encode_scale)));
  }
  /// The share of the warpgroup part 64 x N at (row0, col0) of the scale padding that `grid` does
  /// not cover (0x00), in scale coordinates: 32 gate/up columns per NVFP4 block.
  template <int N>
  __device__ __forceinline__ void padding_beyond(const tile_grid& grid, index_t row0, index_t col0) const {
    constexpr index_t per_block = 2 * format::block_size;
    const fp4fuse::scale_tile_grid scale_grid{{grid.tile_rows, grid.tile_cols / per_block},
                                              {grid.covered_rows, grid.covered_cols / per_block}};
    fp4fuse::write_scale_padding_beyond_grid(out.scales, out.layout, scale_grid, {row0, col0 / per_block, {64, N / per_block}},
                                             static_cast<int>(threadIdx.x % 128), 128);
  }
};

/// An epilogue `Inner` applied to acc + bias: `bias` holds one fp32 value per gate/up column (an
/// expert's [2I] bias for GPT-OSS), read for the columns below `cols` only, and added to the
/// accumulators in fp32 before the inner epilogue sees them (the activation then takes the biased
/// gate and up). The wgmma form goes through the per-warp form.
template <class Inner>
struct with_bias {
  Inner inner;        ///< the epilogue that sees acc + bias
  const float* bias;  ///< [cols], 8-byte aligned
  index_t cols;       ///< gate/up columns (2I)
  /// The inner epilogue's padding granule (a bias changes no padding).
  static constexpr index_t padding_rows = padding_granule<Inner>::rows;  ///< the inner epilogue's
  static constexpr index_t padding_cols = padding_granule<Inner>::cols;  ///< the inner epilogue's

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  template <int Tiles>
  __device__ __forceinline__ void warp(const float (&acc)[Tiles][4], index_t row0, index_t col0) const {
    const int lane = static_cast<int>(threadIdx.x % 32);
    float biased[Tiles][4];
#pragma unroll
    for (int n = 0; n < Tiles; ++n) {
      // mma_m16n8_f32_fragment: c0, c2 at column 2 * (lane % 4), c1, c3 at the next one.
      const index_t col = col0 + 8 * n + 2 * (lane % 4);
      const float2 b = col < cols ? *reinterpret_cast<const float2*>(bias + col) : make_float2(0.0f, 0.0f);
      biased[n][0] = acc[n][0] + b.x;
      biased[n][1] = acc[n][1] + b.y;
      biased[n][2] = acc[n][2] + b.x;
      biased[n][3] = acc[n][3] + b.y;
    }
    inner.warp(biased, row0, col0);
  }
  /// One thread's wgmma m64nNk16 fragment (`wgmma_m64nN_f32_fragment`), row0 the warpgroup tile's row 0.
  template <int Registers>
  __device__ __forceinline__ void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    warpgroup_as_warps(*this, acc, row0, col0);
  }
  /// The inner epilogue's padding (a bias changes no padding).
  template <int N>
  __device__ __forceinline__ auto padding_beyond(const tile_grid& grid, index_t row0, index_t col0) const
      -> decltype(std::declval<const Inner&>().template padding_beyond<N>(grid, row0, col0)) {
    inner.template padding_beyond<N>(grid, row0, col0);
  }
};

}  // namespace fp4fuse::gemm
