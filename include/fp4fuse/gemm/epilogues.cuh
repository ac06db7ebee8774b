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
// 64 x 32 and 64 x 48 tiles): it writes that part's share of the output's padding that the tile grid does not
// cover (the NVFP4 scales' 0x00, through the library's `write_scale_padding_beyond_grid`) and
// nothing else; empty for outputs without padding. Optionally `warpgroup_beyond_rows<N>(row0, col0)`:
// what `warpgroup` writes for a part 64 x N all of whose rows are at or beyond the output's (its
// padding), without the arithmetic; the sm_90a GEMM calls it for a 192-row tile's consumer whose
// rows hold nothing of an expert, and the swap-AB kernel for the rows beyond an expert's last
// chunk (the BF16 epilogues write nothing there and have none).
// Optionally `check(argument_checker&, index_t M, index_t N)`, which fp4fuse::gemm::gemm calls on
// the host before launching: the epilogue's refusals of its own outputs and bias for a GEMM
// output D of M x N (all three have one: the output's extent must be D's, or D's SwiGLU half).
// Columns are those of the GEMM output D = X * W^T: gate/up interleaved in granules of 8.
// Each takes the library's bias type (`fp4fuse::no_bias`, the default, or `fp4fuse::column_bias`:
// an expert's [2I] per-column bias, GPT-OSS) and adds it as the library's fragment adapters do:
// `fp4fuse::mma_add_bias` for the BF16 stores, the fused epilogue's own bias for NVFP4.
#include <cuda_bf16.h>

#include <cstdio>
#include <type_traits>
#include <utility>

#include "fp4fuse/config.cuh"
#include "fp4fuse/fp4fuse.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"

namespace fp4fuse::gemm {

/// Forwards a wgmma fragment to the per-warp form: warp w of the group owns rows 16w..16w+15.
/// \code
/// __device__ void store(const fp4fuse::gemm::store_bf16<>& epi, const float (&acc)[64], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
///   fp4fuse::gemm::warpgroup_as_warps(epi, acc, row0, col0);  // warp w: epi.warp(its float[16][4], row0 + 16 w, col0)
/// }
/// \endcode
template <class Epilogue, int Registers>
FP4FUSE_DEVICE void warpgroup_as_warps(const Epilogue& epi, const float (&acc)[Registers], index_t row0,
                                                   index_t col0) {
  using frag = fp4fuse::wgmma_m64nN_f32_fragment<2 * Registers>;
  epi.warp(frag::warp_tiles(acc), row0 + 16 * frag::warp_in_warpgroup(), col0);
}

/// The accumulators as the epilogue's activation or store sees them: `acc` itself without a bias
/// (no copy), else `biased` filled by the library's `mma_add_bias` (with the lane the stores use).
/// \code
/// __device__ float first(const fp4fuse::column_bias& bias, const float (&acc)[16][4], fp4fuse::gemm::index_t col0) {
///   float biased[16][4];
///   const float(&v)[16][4] = fp4fuse::gemm::biased_accumulators(bias, acc, biased, col0, static_cast<int>(threadIdx.x % 32));  // acc + bias
///   return v[0][0];
/// }
/// \endcode
template <class Bias, int Tiles>
FP4FUSE_DEVICE const float (&biased_accumulators(const Bias& bias, const float (&acc)[Tiles][4], float (&biased)[Tiles][4],
                                                             index_t col0, int lane))[Tiles][4] {
  if constexpr (std::is_same_v<Bias, fp4fuse::no_bias>) {
    return acc;
  } else {
    fp4fuse::mma_add_bias(bias, acc, biased, col0, lane);
    return biased;
  }
}

/// Refuses (into `c`, on the host, before any launch) a BF16 output the epilogues' pair stores
/// cannot write: null data (status::null_pointer), data not 4-byte aligned (misaligned_pointer),
/// cols odd (bad_shape), ld odd or below cols (bad_leading_dimension): each store writes two
/// adjacent BF16 values as one 4-byte word. `name` names the view (e.g. "store_bf16.out").
/// \code
/// fp4fuse::argument_checker c("my_gemm");
/// fp4fuse::gemm::check_bf16_pairs(c, fp4fuse::matrix_view<__nv_bfloat16>{h, M, I, I}, "out");  // a null h: "my_gemm: out.data is null"
/// \endcode
inline void check_bf16_pairs(fp4fuse::argument_checker& c, const fp4fuse::matrix_view<__nv_bfloat16>& out, const char* name) {
  char field[64];
  std::snprintf(field, sizeof field, "%s.data", name);
  c.not_null(out.data, field).aligned(out.data, 4, field, "BF16 pairs stored as 4-byte words");
  c.require(out.cols % 2 == 0, fp4fuse::status::bad_shape, "%s.cols = %lld must be even (BF16 pairs stored as 4-byte words)", name,
            static_cast<long long>(out.cols));
  c.require(out.ld >= out.cols && out.ld % 2 == 0, fp4fuse::status::bad_leading_dimension,
            "%s.ld = %lld must be even and >= cols = %lld (BF16 pairs stored as 4-byte words)", name, static_cast<long long>(out.ld),
            static_cast<long long>(out.cols));
}

/// Refuses (into `c`, on the host, before any launch) an output whose extent is not what the GEMM
/// writes: `rows` x `cols` must be `want_rows` x `want_cols` (status::bad_shape), D's M x N for the
/// BF16 store, M x N / 2 for the SwiGLU outputs. A larger output would get TMA's zero fill (plus
/// the bias) in the rows up to the tile's edge and nothing beyond; a smaller one would be cut.
/// `name` names the output (e.g. "store_bf16.out").
/// \code
/// fp4fuse::argument_checker c("my_gemm");
/// fp4fuse::gemm::check_extent(c, 100, 256, 128, 256, "out");  // "my_gemm: out is [100, 256]: the GEMM writes [128, 256] (M rows; ...)"
/// \endcode
inline void check_extent(fp4fuse::argument_checker& c, long long rows, long long cols, long long want_rows, long long want_cols, const char* name) {
  c.require(rows == want_rows && cols == want_cols, fp4fuse::status::bad_shape,
            "%s is [%lld, %lld]: the GEMM writes [%lld, %lld] (M rows; N columns of D, N / 2 after SwiGLU)", name, rows, cols, want_rows,
            want_cols);
}

/// Refuses (into `c`, on the host, before any launch) a GEMM width N the SwiGLU epilogues cannot
/// pair: N must be a multiple of `granule` (status::not_multiple_of_block), 16 for the BF16 output
/// (8 gate columns and their 8 up columns) and 32 for NVFP4 (one block of 16 outputs). Otherwise
/// the last outputs would pair gate columns with TMA's zero fill.
/// \code
/// fp4fuse::argument_checker c("my_gemm");
/// fp4fuse::gemm::check_gate_up_width(c, 24, 16, "swiglu_bf16");  // "my_gemm: N = 24: swiglu_bf16 needs a multiple of 16 ..."
/// \endcode
inline void check_gate_up_width(fp4fuse::argument_checker& c, long long N, int granule, const char* name) {
  c.require(N % granule == 0, fp4fuse::status::not_multiple_of_block,
            "N = %lld: %s needs a multiple of %d gate/up columns (whole granule pairs of gate and up%s)", N, name, granule,
            granule == 32 ? ", 16 outputs per NVFP4 block" : "");
}

/// Refuses (into `c`, on the host, before any launch) a column bias the epilogues cannot read:
/// count < 0 or odd (status::bad_shape), or count > 0 with data null (null_pointer) or not 8-byte
/// aligned (misaligned_pointer): the epilogues read two neighbouring columns' bias as one 8-byte
/// load (`fp4fuse::mma_add_bias`). `no_bias`: nothing to refuse. `name` names the bias (e.g.
/// "store_bf16.bias").
/// \code
/// fp4fuse::argument_checker c("my_gemm");
/// fp4fuse::gemm::check_bias(c, fp4fuse::no_bias{}, "bias");  // c stays ok
/// \endcode
inline void check_bias(fp4fuse::argument_checker&, const fp4fuse::no_bias&, const char*) {}
/// A column bias: refuses count < 0 or odd (status::bad_shape), and where count > 0 data null
/// (null_pointer) or not 8-byte aligned (misaligned_pointer).
/// \code
/// fp4fuse::argument_checker c("my_gemm");
/// fp4fuse::gemm::check_bias(c, fp4fuse::column_bias{nullptr, 2 * I}, "bias");  // "my_gemm: bias.data is null"
/// \endcode
inline void check_bias(fp4fuse::argument_checker& c, const fp4fuse::column_bias& bias, const char* name) {
  c.require(bias.count >= 0 && bias.count % 2 == 0, fp4fuse::status::bad_shape,
            "%s.count = %lld must be even and >= 0 (two columns' bias are read as one 8-byte load)", name, static_cast<long long>(bias.count));
  if (bias.count <= 0) return;
  char field[64];
  std::snprintf(field, sizeof field, "%s.data", name);
  c.not_null(bias.data, field).aligned(bias.data, 8, field, "two columns' floats read as one 8-byte load");
}

/// Flow 1 (and the plain GEMM): D (+ bias) as BF16 [M, N].
template <class Bias = fp4fuse::no_bias>
struct store_bf16 {
  fp4fuse::matrix_view<__nv_bfloat16> out;  ///< D [M, N]
  Bias bias{};                              ///< `no_bias` or `column_bias` (the GEMM's column order)
  /// Any whole number of n8 tiles per consumer (column_granule, tile_grid.cuh).
  static constexpr int column_granule = 8;

  /// The output's and the bias's refusals for a GEMM output D of M x N (fp4fuse::gemm::gemm calls
  /// it before launching): check_bf16_pairs, out's extent M x N (check_extent), check_bias.
  /// \code
  /// fp4fuse::argument_checker c("my_gemm");
  /// fp4fuse::gemm::store_bf16{fp4fuse::matrix_view<__nv_bfloat16>{h, M, 2 * I, 2 * I}}.check(c, M, 2 * I);  // a null h: "my_gemm: store_bf16.out.data is null"
  /// \endcode
  void check(fp4fuse::argument_checker& c, index_t M, index_t N) const {
    check_bf16_pairs(c, out, "store_bf16.out");
    check_extent(c, out.rows, out.cols, M, N, "store_bf16.out");
    check_bias(c, bias, "store_bf16.bias");
  }

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::store_bf16<>& epi, const float (&acc)[16][4], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warp(acc, row0, col0);  // the warp's 16 x 128 part of D at (row0, col0), as BF16 pairs
  /// }
  /// \endcode
  template <int Tiles>
  FP4FUSE_DEVICE void warp(const float (&in)[Tiles][4], index_t row0, index_t col0) const {
    using frag = fp4fuse::mma_m16n8_f32_fragment;
    const int lane = static_cast<int>(threadIdx.x % 32);
    float biased[Tiles][4];
    const float(&acc)[Tiles][4] = biased_accumulators(bias, in, biased, col0, lane);
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
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::store_bf16<>& epi, const float (&acc)[128], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warpgroup(acc, row0, col0);  // the warpgroup's 64 x 256 part of D (wgmma m64n256k16)
  /// }
  /// \endcode
  template <int Registers>
  FP4FUSE_DEVICE void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    warpgroup_as_warps(*this, acc, row0, col0);
  }
  /// Nothing: the output has no padding.
  /// \code
  /// __device__ void pad(const fp4fuse::gemm::store_bf16<>& epi, const fp4fuse::gemm::tile_grid& grid, fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.padding_beyond<256>(grid, row0, col0);  // writes nothing
  /// }
  /// \endcode
  template <int N>
  FP4FUSE_DEVICE void padding_beyond(const tile_grid&, index_t, index_t) const {}
};

/// `store_bf16{out}`: the plain store.
/// \code
/// const fp4fuse::gemm::store_bf16 epi{fp4fuse::matrix_view<__nv_bfloat16>{h, M, 2 * I, 2 * I}};  // store_bf16<no_bias>
/// \endcode
store_bf16(fp4fuse::matrix_view<__nv_bfloat16>) -> store_bf16<fp4fuse::no_bias>;
/// `store_bf16{out, bias}`: the store of D + bias.
/// \code
/// const float* d_bias = nullptr;  // [2I] in device memory
/// const fp4fuse::gemm::store_bf16 epi{fp4fuse::matrix_view<__nv_bfloat16>{h, M, 2 * I, 2 * I}, fp4fuse::column_bias{d_bias, 2 * I}};  // store_bf16<column_bias>
/// \endcode
template <class Bias>
store_bf16(fp4fuse::matrix_view<__nv_bfloat16>, Bias) -> store_bf16<Bias>;

/// Flow 2: the compact SwiGLU output act(gate + b_gate) * (up + b_up) as BF16 [M, I] (I = N / 2).
template <class Activation, class Bias = fp4fuse::no_bias>
struct swiglu_bf16 {
  fp4fuse::matrix_view<__nv_bfloat16> out;  ///< [M, N / 2]
  Activation act;                           ///< the activation of gate (fp4fuse::activation)
  Bias bias{};                              ///< `no_bias` or `column_bias` (the GEMM's column order)
  /// Whole gate/up granule pairs per consumer (column_granule, tile_grid.cuh).
  static constexpr int column_granule = 16;

  /// The output's and the bias's refusals for a GEMM output D of M x N (fp4fuse::gemm::gemm calls
  /// it before launching): check_bf16_pairs, N a multiple of 16 (check_gate_up_width), out's extent
  /// M x N / 2 (check_extent), check_bias.
  /// \code
  /// fp4fuse::argument_checker c("my_gemm");
  /// fp4fuse::gemm::swiglu_bf16<fp4fuse::activation::swiglu>{{h, M, I, I}, {}}.check(c, M, 2 * I);  // a null h: "my_gemm: swiglu_bf16.out.data is null"
  /// \endcode
  void check(fp4fuse::argument_checker& c, index_t M, index_t N) const {
    check_bf16_pairs(c, out, "swiglu_bf16.out");
    check_gate_up_width(c, N, column_granule, "swiglu_bf16");
    check_extent(c, out.rows, out.cols, M, N / 2, "swiglu_bf16.out");
    check_bias(c, bias, "swiglu_bf16.bias");
  }

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::swiglu_bf16<fp4fuse::activation::swiglu>& epi, const float (&acc)[16][4], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warp(acc, row0, col0);  // 16 rows x 64 outputs act(gate) * up, from gate/up columns col0 .. col0 + 127
  /// }
  /// \endcode
  template <int Tiles>
  FP4FUSE_DEVICE void warp(const float (&in)[Tiles][4], index_t row0, index_t col0) const {
    using frag = fp4fuse::mma_m16n8_f32_fragment;
    const int lane = static_cast<int>(threadIdx.x % 32);
    float biased[Tiles][4];
    const float(&acc)[Tiles][4] = biased_accumulators(bias, in, biased, col0, lane);
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
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::swiglu_bf16<fp4fuse::activation::swiglu>& epi, const float (&acc)[128], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warpgroup(acc, row0, col0);  // 64 rows x 128 outputs of the 256 gate/up columns at col0
  /// }
  /// \endcode
  template <int Registers>
  FP4FUSE_DEVICE void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    warpgroup_as_warps(*this, acc, row0, col0);
  }
  /// Nothing: the output has no padding.
  /// \code
  /// __device__ void pad(const fp4fuse::gemm::swiglu_bf16<fp4fuse::activation::swiglu>& epi, const fp4fuse::gemm::tile_grid& grid, fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.padding_beyond<256>(grid, row0, col0);  // writes nothing
  /// }
  /// \endcode
  template <int N>
  FP4FUSE_DEVICE void padding_beyond(const tile_grid&, index_t, index_t) const {}
};

/// Flow 3: SwiGLU -> NVFP4 straight from the accumulators (the library's fragment epilogue, its
/// bias included). The global encode scale is static (calibrated), read from device memory as
/// serving engines do.
template <class Activation, class Intermediate = fp4fuse::intermediate::fp32, class Recipe = fp4fuse::recipe::te_exact,
          class Bias = fp4fuse::no_bias>
struct swiglu_nvfp4 {
  using format = fp4fuse::format::nvfp4<Recipe>;   ///< NVFP4 with `Recipe`
  using gate_up = fp4fuse::gate_up::interleaved<8>;  ///< W's gate/up rows interleaved by 8
  fp4fuse::quantized_matrix<format, fp4fuse::scale_layout::swizzled_128x4> out;  ///< packed [M, N / 4] bytes and 128x4 scales
  const float* global_encode_scale;  ///< S, device memory
  Activation act;                    ///< the activation of gate
  Bias bias{};                       ///< `no_bias` or `column_bias` (the GEMM's column order), the description's
  /// The scales' padding granule in output rows and gate/up columns (128 x 4 scale blocks).
  static constexpr index_t padding_rows = fp4fuse::scale_layout::swizzled_128x4::row_tile;  ///< 128 rows
  /// 4 scale columns of 32 gate/up columns each.
  static constexpr index_t padding_cols = fp4fuse::scale_layout::swizzled_128x4::col_tile * 2 * format::block_size;
  /// Whole NVFP4 blocks (32 gate/up columns) per consumer (column_granule, tile_grid.cuh).
  static constexpr int column_granule = 2 * format::block_size;

  /// The library's fused-epilogue description this binding builds per call.
  using operation = fp4fuse::fused_epilogue<format, fp4fuse::sink::direct<format, fp4fuse::scale_layout::swizzled_128x4>, Activation, gate_up,
                                            Bias, fp4fuse::output_amax::none, Intermediate>;

  /// One warp's m16n8 fragments (`mma_m16n8_f32_fragment`) of the tile at (row0, col0).
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi, const float (&acc)[16][4], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warp(acc, row0, col0);  // 16 rows x 64 outputs: their packed E2M1 bytes and 4 E4M3 scales a row
  /// }
  /// \endcode
  template <int Tiles>
  FP4FUSE_DEVICE void warp(const float (&acc)[Tiles][4], index_t row0, index_t col0) const {
    fp4fuse::mma_epilogue(op(), acc, {row0, col0});
  }
  /// One thread's wgmma m64nNk16 fragment (`wgmma_m64nN_f32_fragment`), row0 the warpgroup tile's row 0.
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi, const float (&acc)[128], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warpgroup(acc, row0, col0);  // 64 rows x 128 outputs: 8 NVFP4 blocks a row
  /// }
  /// \endcode
  template <int Registers>
  FP4FUSE_DEVICE void warpgroup(const float (&acc)[Registers], index_t row0, index_t col0) const {
    fp4fuse::wgmma_epilogue(op(), acc, {row0, col0});
  }
  /// One thread's swap-AB wgmma m64nNk16 fragment (`fp4fuse::wgmma_swap_ab_epilogue`: W's 64
  /// gate/up columns from `col0` as wgmma's M, N = 2 * Registers tokens from output row `token0`),
  /// through `scratch` (`wgmma_swap_ab_scratch_floats<ChunkTokens>` floats of shared memory, this
  /// warpgroup's) and named barrier `barrier`. Warpgroup-collective.
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi, const float (&acc)[72], fp4fuse::gemm::index_t token0,
  ///                      fp4fuse::gemm::index_t col0, float* scratch) {
  ///   epi.warpgroup_swap_ab<64>(acc, token0, col0, scratch, 1);  // 144 tokens x 32 outputs, 64 tokens at a time through the scratch
  /// }
  /// \endcode
  template <int ChunkTokens, int Registers>
  FP4FUSE_DEVICE void warpgroup_swap_ab(const float (&acc)[Registers], index_t token0, index_t col0, float* scratch, int barrier) const {
    fp4fuse::wgmma_swap_ab_epilogue<ChunkTokens>(op(), acc, {token0, col0}, scratch, barrier);
  }
  /// The refusals of its output, global encode scale and bias for a GEMM output D of M x N
  /// (fp4fuse::gemm::gemm calls it before launching): `argument_checker::quantized` (packed and
  /// scales non-null, packed 8-byte aligned, ld_packed a multiple of 8 and >= cols / 2, scale
  /// columns > 0), N a multiple of 32 (check_gate_up_width), out's extent M x N / 2 (rows x scale
  /// columns * 16: check_extent), S non-null and 4-byte aligned, check_bias.
  /// \code
  /// fp4fuse::argument_checker c("my_gemm");
  /// const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu> epi{{nullptr, I / 2, scales, {M, I / 16}}, d_S, {}};
  /// epi.check(c, M, 2 * I);  // a null packed: "my_gemm: swiglu_nvfp4.out.packed is null"
  /// \endcode
  void check(fp4fuse::argument_checker& c, index_t M, index_t N) const {
    c.quantized(out, "swiglu_nvfp4.out");
    check_gate_up_width(c, N, column_granule, "swiglu_nvfp4");
    check_extent(c, out.rows(), out.cols(), M, N / 2, "swiglu_nvfp4.out");
    c.not_null(global_encode_scale, "swiglu_nvfp4.global_encode_scale (S, device memory)")
        .aligned(global_encode_scale, 4, "swiglu_nvfp4.global_encode_scale", "a float");
    check_bias(c, bias, "swiglu_nvfp4.bias");
  }
  /// The library's description of this epilogue, its codec built from the global encode scale.
  /// \code
  /// __device__ void tile(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi, const float (&acc)[16][4], fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   fp4fuse::mma_epilogue(epi.op(), acc, {row0, col0});  // what warp() does
  /// }
  /// \endcode
  FP4FUSE_DEVICE operation op() const { return {fp4fuse::block_codec<format>(*global_encode_scale), {out}, act, gate_up{}, bias}; }
  /// Brings the global encode scale into this SM's L1 at kernel start (`prefetch.global.L1`; no
  /// cuda::ptx wrapper), so the epilogue after the last MMA does not wait for a DRAM read of it.
  /// \code
  /// __device__ void kernel_start(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi) {
  ///   if (threadIdx.x == 0) epi.prefetch();  // S in this SM's L1 before the first epilogue reads it
  /// }
  /// \endcode
  FP4FUSE_DEVICE void prefetch() const {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(__cvta_generic_to_global(global_encode_scale)));
  }
  /// The warpgroup part 64 x N at (row0, col0) when it holds no row of the output (row0 >=
  /// out.rows(), a consumer wholly beyond an expert's rows): its scale padding (0x00), which is all
  /// `warpgroup` would write there, without the activations (`fp4fuse::write_scale_padding_in`).
  /// Warpgroup-collective, as `warpgroup`: all 128 threads call it; col0 a multiple of 32.
  /// \code
  /// __device__ void empty_part(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi, fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.warpgroup_beyond_rows<128>(row0, col0);  // all 128 threads: the 64 x 128 part's scale padding (0x00)
  /// }
  /// \endcode
  template <int N>
  FP4FUSE_DEVICE void warpgroup_beyond_rows(index_t row0, index_t col0) const {
    static_assert(N % 32 == 0, "swiglu_nvfp4::warpgroup_beyond_rows: a part of whole NVFP4 blocks (32 gate/up columns each)");
    constexpr index_t per_block = 2 * format::block_size;
    fp4fuse::write_scale_padding_in(out.scales, out.layout, {row0, col0 / per_block, {64, N / per_block}}, static_cast<int>(threadIdx.x % 128), 128);
  }
  /// The share of the warpgroup part 64 x N at (row0, col0) of the scale padding that `grid` does
  /// not cover (0x00), in scale coordinates: 32 gate/up columns per NVFP4 block.
  /// \code
  /// __device__ void pad(const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu>& epi, const fp4fuse::gemm::tile_grid& grid, fp4fuse::gemm::index_t row0, fp4fuse::gemm::index_t col0) {
  ///   epi.padding_beyond<256>(grid, row0, col0);  // all 128 threads of the warpgroup
  /// }
  /// \endcode
  template <int N>
  FP4FUSE_DEVICE void padding_beyond(const tile_grid& grid, index_t row0, index_t col0) const {
    constexpr index_t per_block = 2 * format::block_size;
    const fp4fuse::scale_tile_grid scale_grid{{grid.tile_rows, grid.tile_cols / per_block},
                                              {grid.covered_rows, grid.covered_cols / per_block}};
    fp4fuse::write_scale_padding_beyond_grid(out.scales, out.layout, scale_grid, {row0, col0 / per_block, {64, N / per_block}},
                                             static_cast<int>(threadIdx.x % 128), 128);
  }
};

}  // namespace fp4fuse::gemm
