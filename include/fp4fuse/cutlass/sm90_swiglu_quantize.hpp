#pragma once
/// \file cutlass/sm90_swiglu_quantize.hpp
/// How `SwiGluQuantize` runs in CUTLASS's sm90 TMA warp-specialized epilogue (cooperative and
/// ping-pong `GemmUniversal`): an EVT store node, `Sm90SwiGluQuantize`, and the
/// `FusionCallbacks` specialisation that lets `CollectiveBuilder` pick it from the operation.
///
/// The collective hands each epilogue subtile's accumulators to the node's `visit` (kept as they
/// are) and then to `reduce` in one piece; there the node views its thread's values as the
/// mma.sync m16n8 tiles of its warp's 16 rows (the wgmma accumulator's own order: the epilogue does
/// not move values between threads) and gives them to fp4fuse's fragment epilogue, which applies
/// the activation, reduces each block's amax across the quad, encodes, and stores packed bytes and
/// scale bytes straight to global memory (padding inside the tile as 0x00). No shared memory, no
/// D tensor, no TMA store. `end` writes the scale padding beyond the tile grid and the output amax.
/// Numerics are exactly `fp4fuse::swiglu_quantize` on the same fp32 accumulators
/// (tests/cutlass/sm90_swiglu_quantize.cu).
///
/// \code // not compiled: needs the CUTLASS headers (tests/cutlass/sm90_gemms.cuh compiles the same lines)
/// using Op = fp4fuse::cutlass_ext::SwiGluQuantize<fp4fuse::format::nvfp4<>, fp4fuse::activation::swiglu>;
/// using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
///     Shape<_128, _256, _64>, Shape<_1, _1, _1>, Shape<_128, _64>, float, float, void, cutlass::layout::RowMajor, 8,
///     void, cutlass::layout::RowMajor, 8, cutlass::epilogue::TmaWarpSpecializedCooperative, Op>::CollectiveOp;
/// typename Epi::FusionCallbacks::Arguments fusion{};
/// fusion.out = out;        // quantized_matrix<nvfp4<>, swizzled_128x4>
/// fusion.encode_scale = d_S;
/// \endcode
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/fusion/callbacks.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>

#include "fp4fuse/cutlass/detail/library.hpp"
#include "fp4fuse/cutlass/detail/node_base.hpp"
#include "fp4fuse/cutlass/swiglu_quantize_operation.hpp"

namespace fp4fuse::cutlass_ext {

/// The sm90 EVT node: a store node over one child, the accumulator (`Sm90AccFetch`). Its
/// requirements are checked at compile time (tile shapes) and by `can_implement` (the problem).
/// \tparam Op              `SwiGluQuantize<...>`
/// \tparam CtaTileShapeMNK the CTA tile; N a multiple of 2 * block size
/// \tparam EpilogueTile    the epilogue subtile: M the MMA tile's M (128 cooperative, 64 ping-pong),
///                         N a multiple of 2 * block size (32 NVFP4, 64 MXFP4) that divides the tile's N
template <class Op, class CtaTileShapeMNK, class EpilogueTile>
struct Sm90SwiGluQuantize : detail::node_base<Op> {
  using operation_type = Op;                    ///< the operation this node implements
  using Format = typename Op::format_type;       ///< NVFP4 or MXFP4 (with its recipe)
  static constexpr int block_size = Format::block_size;       ///< 16 (NVFP4) or 32 (MXFP4) outputs per scale
  static constexpr int tile_m = cute::size<0>(CtaTileShapeMNK{});  ///< the CTA tile's rows
  static constexpr int tile_n = cute::size<1>(CtaTileShapeMNK{});  ///< the CTA tile's gate/up columns
  static constexpr int epi_m = cute::size<0>(EpilogueTile{});      ///< the epilogue subtile's rows
  static constexpr int epi_n = cute::size<1>(EpilogueTile{});      ///< the epilogue subtile's gate/up columns
  static_assert(tile_n % (2 * block_size) == 0,
                "fp4fuse Sm90SwiGluQuantize: the CTA tile's N must be a whole number of blocks of gate/up pairs (a multiple of 32 for NVFP4, 64 for MXFP4)");
  static_assert(epi_n % (2 * block_size) == 0 && tile_n % epi_n == 0,
                "fp4fuse Sm90SwiGluQuantize: the epilogue tile's N must be a multiple of 32 (NVFP4) or 64 (MXFP4) gate/up columns and divide the CTA tile's N");
  /// n8 accumulator tiles per warp and subtile.
  static constexpr int tiles = epi_n / 8;
  using Params = typename detail::node_base<Op>::Params;  ///< the device-side arguments (CUTLASS's `Params`)
  using detail::node_base<Op>::node_base;

  // Its own tile state rather than detail::node_tile: deriving from that (the sm100 node's) put the
  // MXFP4 cooperative kernel's state on the stack (224 bytes of local memory, sm_90a).
  /// One consumer thread's state for one CTA tile (CUTLASS's consumer store callbacks): `reduce`
  /// quantizes each epilogue subtile from the thread's registers, `end` writes the tile's share of
  /// the scale padding beyond the grid.
  template <class ThrCoordTensor, class TileCoord, int Threads>
  struct ConsumerStoreCallbacks : cutlass::epilogue::fusion::EmptyConsumerStoreCallbacks {
    /// The tile's state: the thread's coordinates, its first accumulator's row and column, the tile
    /// (group = its 4th coordinate), the problem's M and N, and the group's output and codec.
    CUTLASS_DEVICE ConsumerStoreCallbacks(ThrCoordTensor tCcD, cuda::std::int64_t first_row, cuda::std::int64_t first_col, TileCoord tile,
                                          cuda::std::int64_t M, cuda::std::int64_t N, int thread_idx, Params const& params)
        : tCcD(tCcD), first_row(first_row), first_col(first_col), tile(tile), M(M), N(N), thread_idx(thread_idx), params(params),
          group(static_cast<int>(cute::get<3>(tile))), out(detail::library<Op>::group_output(params, group, M)),
          codec(detail::library<Op>::codec(params, group)) {}

    ThrCoordTensor tCcD;                      ///< (R2S, R2S_M, R2S_N, EPI_M, EPI_N): the thread's coordinates relative to its first
    cuda::std::int64_t first_row;             ///< the thread's first accumulator's row in D (of its group)
    cuda::std::int64_t first_col;             ///< the thread's first accumulator's gate/up column in D
    TileCoord tile;                           ///< (m, n, k, l): l is the group of a grouped GEMM
    cuda::std::int64_t M;                     ///< the problem's (the group's) rows
    cuda::std::int64_t N;                     ///< the problem's gate/up columns
    int thread_idx;                           ///< the thread's index among the epilogue's threads
    Params const& params;                     ///< the node's device arguments
    int group;                                ///< the tile's group (0 for a dense GEMM)
    typename detail::library<Op>::dense_output out;  ///< the group's output
    typename detail::library<Op>::codec_type codec;  ///< the group's block codec (its global scale)

    /// Passes the accumulator fragment through: quantized in `reduce`, once the subtile is whole.
    template <class ElementAccumulator, class ElementInput, int FragmentSize>
    CUTLASS_DEVICE auto visit(cutlass::Array<ElementAccumulator, FragmentSize> const&, int, int, int,
                              cutlass::Array<ElementInput, FragmentSize> const& frg_input) {
      return frg_input;  // quantized in `reduce`, once the subtile is whole
    }

    /// Quantizes epilogue subtile (sub_m, sub_n) from the thread's registers (`visit_results`):
    /// act(gate) * up as packed E2M1 and block scales through the library's wgmma form, exactly
    /// `swiglu_quantize`'s bytes. A register layout other than the wgmma accumulator's traps.
    template <class STensor, class SyncFn, class VTensor>
    CUTLASS_DEVICE void reduce(STensor&&, SyncFn const&, int sub_m, int sub_n, bool, VTensor visit_results) {
      using namespace cute;
      Tensor crd = tCcD(_, _, _, sub_m, sub_n);
      using Fragment = typename cute::remove_cvref_t<VTensor>::value_type;
      constexpr int fragment_size = Fragment::kElements;
      static_assert(decltype(size(crd))::value == 4 * tiles,
                    "fp4fuse Sm90SwiGluQuantize: each thread must hold 2 rows x N/4 columns of its warp's 16 rows per subtile "
                    "(the epilogue tile's M must be the MMA tile's: 128 cooperative, 64 ping-pong)");
      static_assert(decltype(size(visit_results))::value * fragment_size == 4 * tiles, "fp4fuse Sm90SwiGluQuantize: subtile size mismatch");
      // The wgmma accumulator's order: element (dm, dn) of the thread's share, dm in {0, 8} and
      // dn = 8 n + {0, 1}, is register 2 (dm / 8) + dn % 8 of n8 tile n. The offsets are static
      // once unrolled, so this is a renaming of registers; a layout that breaks it traps.
      float acc[tiles][4];
      bool layout_ok = true;
      CUTLASS_PRAGMA_UNROLL
      for (int v = 0; v < size(visit_results); ++v) {
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < fragment_size; ++i) {
          const auto c = crd(v * fragment_size + i);
          const int dm = static_cast<int>(get<0>(c)) - sub_m * epi_m;
          const int dn = static_cast<int>(get<1>(c)) - sub_n * epi_n;
          layout_ok = layout_ok && (dm == 0 || dm == 8) && dn % 8 < 2 && dn >= 0 && dn < epi_n;
          acc[dn / 8][2 * (dm / 8) + dn % 8] = static_cast<float>(visit_results(v)[i]);
        }
      }
      if (!layout_ok) __trap();
      const int lane = thread_idx % 32;  // the fragment's first register sits at row lane / 4, column 2 (lane % 4)
      const tile_origin origin{first_row + sub_m * epi_m - lane / 4, first_col + sub_n * epi_n - 2 * (lane % 4)};
      detail::library<Op>::quantize_warp_tile(acc, origin, params, out, group, codec);
    }

    /// After the tile's last subtile: the scale padding the tile grid does not cover (0x00).
    CUTLASS_DEVICE void end() {
      detail::library<Op>::template pad_tile_beyond_grid<tile_m, tile_n>(out, cute::get<0>(tile), cute::get<1>(tile), M, N, thread_idx, Threads);
    }
  };

  /// CUTLASS's hook: the consumer store callbacks of the tile `args` describes.
  template <bool ReferenceSrc, class... Args>
  CUTLASS_DEVICE auto get_consumer_store_callbacks(cutlass::epilogue::fusion::detail::ConsumerStoreArgs<Args...> const& args) {
    using namespace cute;
    static_assert(ReferenceSrc, "fp4fuse Sm90SwiGluQuantize: the collective must reference the accumulator (copy source) layout");
    auto [M, N, K, L] = args.problem_shape_mnkl;
    // residue_tCcD = (M, N) - the thread's first coordinate.
    const cuda::std::int64_t first_row = static_cast<cuda::std::int64_t>(M) - static_cast<cuda::std::int64_t>(get<0>(args.residue_tCcD));
    const cuda::std::int64_t first_col = static_cast<cuda::std::int64_t>(N) - static_cast<cuda::std::int64_t>(get<1>(args.residue_tCcD));
    constexpr int threads = decltype(size(args.tiled_mma))::value;
    using Callbacks = ConsumerStoreCallbacks<decltype(args.tCcD), decltype(args.tile_coord_mnkl), threads>;
    return Callbacks(args.tCcD, first_row, first_col, args.tile_coord_mnkl, M, N, args.thread_idx, this->params);
  }
};

}  // namespace fp4fuse::cutlass_ext

namespace cutlass::epilogue::fusion {

/// `CollectiveBuilder` with `fp4fuse::cutlass_ext::SwiGluQuantize` as the fusion operation gets
/// this: the node over the accumulator. Arguments: the fields out, encode_scale, activation, bias, amax.
template <int StagesC, int StagesD, int FragmentSize, bool ReuseSmemC, bool DelayTmaStore, class Format, class Activation, class Layout,
          class GateUp, class Intermediate, class CtaTileShapeMNK, class EpilogueTile>
struct FusionCallbacks<epilogue::Sm90TmaWarpSpecialized<StagesC, StagesD, FragmentSize, ReuseSmemC, DelayTmaStore>,
                       fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>
    : fp4fuse::cutlass_ext::detail::layout_callbacks<fp4fuse::cutlass_ext::Sm90SwiGluQuantize<
          fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>, false> {
  using fp4fuse::cutlass_ext::detail::layout_callbacks<fp4fuse::cutlass_ext::Sm90SwiGluQuantize<
      fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>, false>::layout_callbacks;
};

/// The same node in CUTLASS's ptr-array grouped GEMM (`KernelPtrArrayTmaWarpSpecializedCooperative`
/// / `Pingpong` with `GroupProblemShape`): group e writes expert e's rows and its block of the grouped
/// scale layout (`Layout` = `scale_layout::grouped_swizzled_128x4<ExpertStart>`, offsets in device
/// memory); group e's M must be expert e's row count. Arguments as the dense GEMM's, and group e's S
/// and bias at `encode_scale_group_stride` / `bias_group_stride` (0: one for all).
template <int StagesC, int StagesD, int FragmentSize, bool ReuseSmemC, bool DelayTmaStore, int NumEpilogueWarpGroups, class Format,
          class Activation, class Layout, class GateUp, class Intermediate, class CtaTileShapeMNK, class EpilogueTile>
struct FusionCallbacks<epilogue::Sm90PtrArrayTmaWarpSpecialized<StagesC, StagesD, FragmentSize, ReuseSmemC, DelayTmaStore, NumEpilogueWarpGroups>,
                       fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>
    : fp4fuse::cutlass_ext::detail::layout_callbacks<fp4fuse::cutlass_ext::Sm90SwiGluQuantize<
          fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>, true> {
  using fp4fuse::cutlass_ext::detail::layout_callbacks<fp4fuse::cutlass_ext::Sm90SwiGluQuantize<
      fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>, true>::layout_callbacks;
};

}  // namespace cutlass::epilogue::fusion
