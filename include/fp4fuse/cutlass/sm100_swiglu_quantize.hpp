#pragma once
/// \file cutlass/sm100_swiglu_quantize.hpp
/// How `SwiGluQuantize` runs in CUTLASS's sm100 (Blackwell) epilogue: an EVT store node,
/// `Sm100SwiGluQuantize`, and the `FusionCallbacks` specialisation of CUTLASS's sm100 ptr-array
/// TMA warp-specialized collective (`PtrArrayTmaWarpSpecialized1Sm` / `2Sm` with
/// `KernelPtrArrayTmaWarpSpecialized1SmSm100` / `2SmSm100`: the grouped GEMM of an MoE layer).
///
/// The sm100 collective copies each epilogue subtile from tensor memory with `tcgen05.ld` 32x32b
/// (with the one-byte `ElementAux` of `SwiGluQuantize` and a row-major D, CUTLASS's builder picks
/// `SM100_TMEM_LOAD_32dp32b*`): thread t of the 128 epilogue threads holds row t of the subtile,
/// consecutive columns, and `visit` hands it `FragmentSize` (= the subtile's N) of them at once.
/// The node gives that row segment to fp4fuse's row form (`row_epilogue`): activation, block
/// quantization, packed bytes and scale bytes straight to global memory, with no data exchanged
/// between threads (the amax, when asked for, is one warp reduction per segment). No shared
/// memory, no D tensor, no TMA store: with D = void the ptr-array collective stores nothing.
///
/// Why only the ptr-array collective: CUTLASS 4.2's dense sm100 TMA collective
/// (`collective/sm100_epilogue_tma_warpspecialized.hpp`) has no D = void path. Its builder passes
/// `void` through as ElementD (only its own shared-memory element type becomes `ElementAux`), and the
/// collective takes `SmemElementD = get_unpacked_element_type<void>` (void: its stage strides
/// divide by `sizeof_bits_v<void>`, 0) and always TMA-stores D; the no-smem sm100 collective always
/// stores D from registers (`make_tensor<ElementD>`). The ptr-array collective has
/// `is_destination_supported = !is_void_v<ElementD>` and skips D's shared memory store and TMA
/// store. A dense output is the grouped GEMM with one group (one expert, offsets {0, M}).
///
/// Status: compiled for sm_100a and its PTX checked (tests/cutlass/sm100_ptx.py); never run (no
/// Blackwell GPU here). The numerics are the row form's, which is tested bit-exact
/// (tests/epilogue/row.cu).
/// \code // not compiled: needs the CUTLASS headers (tests/cutlass/sm100_swiglu_quantize.cu compiles the same lines)
/// using Op = fp4fuse::cutlass_ext::SwiGluQuantize<fp4fuse::format::nvfp4<>, fp4fuse::activation::swiglu,
///     fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>>;
/// using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp,
///     Shape<_128, _256, _64>, Shape<_1, _1, _1>, Shape<_128, _64>, float, float, void, cutlass::layout::RowMajor*, 8,
///     void, cutlass::layout::RowMajor*, 8, cutlass::epilogue::PtrArrayTmaWarpSpecialized1Sm, Op>::CollectiveOp;
/// \endcode
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/fusion/callbacks.hpp>
#include <cutlass/epilogue/fusion/sm100_callbacks_tma_warpspecialized.hpp>

#include "fp4fuse/cutlass/detail/library.hpp"
#include "fp4fuse/cutlass/detail/node_base.hpp"
#include "fp4fuse/cutlass/swiglu_quantize_operation.hpp"

namespace fp4fuse::cutlass_ext {

namespace detail {

/// What the sm100 node's `visit` returns: nothing, as whatever register fragment the collective
/// keeps for its D (with D = void it stores none; its element type is the collective's choice).
struct no_output {
  template <class T, int N, bool RegisterSized>
  CUTLASS_DEVICE operator cutlass::Array<T, N, RegisterSized>() const {
    cutlass::Array<T, N, RegisterSized> a;
    a.clear();
    return a;
  }
};

}  // namespace detail

/// The sm100 EVT node: a store node over the accumulator (`Sm90AccFetch`, which sm100 reuses).
/// \tparam Op              `SwiGluQuantize<...>`
/// \tparam CtaTileShapeMNK the CTA tile (M 128: one row per epilogue thread); N a multiple of 2 * block size
/// \tparam EpilogueTile    the epilogue subtile: M 128, N a multiple of 2 * block size (32 NVFP4, 64 MXFP4)
template <class Op, class CtaTileShapeMNK, class EpilogueTile>
struct Sm100SwiGluQuantize : detail::node_base<Op> {
  using operation_type = Op;                    ///< the operation this node implements
  using Format = typename Op::format_type;       ///< NVFP4 or MXFP4 (with its recipe)
  static constexpr int block_size = Format::block_size;       ///< 16 (NVFP4) or 32 (MXFP4) outputs per scale
  static constexpr int tile_m = cute::size<0>(CtaTileShapeMNK{});  ///< the CTA tile's rows (128)
  static constexpr int tile_n = cute::size<1>(CtaTileShapeMNK{});  ///< the CTA tile's gate/up columns
  static constexpr int epi_m = cute::size<0>(EpilogueTile{});      ///< the epilogue subtile's rows (128)
  static constexpr int epi_n = cute::size<1>(EpilogueTile{});      ///< the epilogue subtile's gate/up columns
  static_assert(tile_n % (2 * block_size) == 0,
                "fp4fuse Sm100SwiGluQuantize: the CTA tile's N must be a whole number of blocks of gate/up pairs (a multiple of 32 for NVFP4, 64 for MXFP4)");
  static_assert(epi_m == 128 && tile_m == 128,
                "fp4fuse Sm100SwiGluQuantize: the CTA tile's and the epilogue tile's M must be 128 (tcgen05.ld 32x32b: one row per epilogue "
                "thread; a 2-SM MMA tile of 256 rows gives each CTA 128)");
  static_assert(epi_n % (2 * block_size) == 0 && tile_n % epi_n == 0,
                "fp4fuse Sm100SwiGluQuantize: the epilogue tile's N must be a multiple of 32 (NVFP4) or 64 (MXFP4) gate/up columns and divide the CTA tile's N");
  using detail::node_base<Op>::node_base;

  /// One epilogue thread's state for one CTA tile (CUTLASS's consumer store callbacks): `visit`
  /// quantizes each fragment of the thread's row, `end` writes the tile's share of the scale
  /// padding beyond the grid.
  template <class ThrCoordTensor, class TileCoord, int Threads>
  struct ConsumerStoreCallbacks : cutlass::epilogue::fusion::EmptyConsumerStoreCallbacks, detail::node_tile<Op, tile_m, tile_n, TileCoord> {
    using Tile = detail::node_tile<Op, tile_m, tile_n, TileCoord>;  ///< the tile's output, codec and coordinates
    /// The tile's state from the thread's coordinates and the collective's tile arguments.
    template <class... TileArgs>
    CUTLASS_DEVICE ConsumerStoreCallbacks(ThrCoordTensor tCcD, TileArgs const&... tile_args)
        : Tile(tile_args...), tCcD(tCcD), args(this->params) {}

    ThrCoordTensor tCcD;  ///< (T2R, T2R_M, T2R_N, EPI_M, EPI_N): the thread's coordinates relative to its first
    /// The node's arguments by value: read through the node's reference, the MXFP4 kernel kept a
    /// copy of the collective's parameters in local memory (208 bytes, nvcc 13.0); by value they are registers.
    SwiGluQuantizeArguments<Op> args;

    /// One fragment: FragmentSize consecutive gate/up columns of the thread's row, quantized and
    /// stored here (the collective keeps what `visit` returns in its D registers, stored nowhere).
    template <class ElementAccumulator, class ElementInput, int FragmentSize>
    CUTLASS_DEVICE auto visit(cutlass::Array<ElementAccumulator, FragmentSize> const&, int epi_v, int sub_m, int sub_n,
                              cutlass::Array<ElementInput, FragmentSize> const& frg_input) {
      using namespace cute;
      static_assert(FragmentSize % (2 * block_size) == 0,
                    "fp4fuse Sm100SwiGluQuantize: a fragment must be whole blocks of gate/up pairs (the epilogue tile's N a multiple of 32 / 64)");
      Tensor crd = tCcD(_, _, _, sub_m, sub_n);
      // The 32x32b order: register i of fragment v is column c0 + i of one row. The offsets are
      // static once unrolled (the check folds away); a layout that breaks it traps.
      const auto c0 = crd(epi_v * FragmentSize);
      float acc[FragmentSize];
      bool layout_ok = true;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < FragmentSize; ++i) {
        const auto c = crd(epi_v * FragmentSize + i);
        layout_ok = layout_ok && get<0>(c) == get<0>(c0) && get<1>(c) == get<1>(c0) + i;
        acc[i] = static_cast<float>(frg_input[i]);
      }
      const tile_origin origin{this->first_row + static_cast<cuda::std::int64_t>(get<0>(c0)),
                               this->first_col + static_cast<cuda::std::int64_t>(get<1>(c0))};
      if (!layout_ok || origin.gate_up_col % (2 * block_size) != 0) __trap();
      detail::library<Op>::quantize_row(acc, origin, args, this->out, this->group, this->codec);
      return detail::no_output{};
    }

    /// After the tile's last fragment: the scale padding the tile grid does not cover (0x00).
    CUTLASS_DEVICE void end() { this->pad_beyond_grid(Threads); }
  };

  /// CUTLASS's hook: the consumer store callbacks of the tile `args` describes.
  template <bool ReferenceSrc, class... Args>
  CUTLASS_DEVICE auto get_consumer_store_callbacks(cutlass::epilogue::fusion::detail::ConsumerStoreArgs<Args...> const& args) {
    static_assert(!ReferenceSrc, "fp4fuse Sm100SwiGluQuantize: the sm100 collective's registers follow the tmem load's destination layout");
    constexpr int threads = decltype(cute::size(args.tiled_copy))::value;  // the tmem load's threads: the epilogue's 128
    using Callbacks = ConsumerStoreCallbacks<decltype(args.tCcD), decltype(args.tile_coord_mnkl), threads>;
    return Callbacks(args.tCcD, args.problem_shape_mnkl, args.tile_coord_mnkl, args.residue_tCcD, args.thread_idx, this->params);
  }
};

}  // namespace fp4fuse::cutlass_ext

namespace cutlass::epilogue::fusion {

/// `CollectiveBuilder<Sm100, ...>` with `SwiGluQuantize` in the ptr-array grouped GEMM
/// (`PtrArrayTmaWarpSpecialized1Sm` / `2Sm`, D and C void) gets this: group e writes expert e's
/// rows and its block of the grouped scale layout, as on sm90. Arguments as the sm90 node's.
template <int StagesC, int StagesD, int FragmentSize, bool ReuseSmemC, bool DelayTmaStore, class Format, class Activation, class Layout,
          class GateUp, class Intermediate, class CtaTileShapeMNK, class EpilogueTile>
struct FusionCallbacks<epilogue::Sm100PtrArrayTmaWarpSpecialized<StagesC, StagesD, FragmentSize, ReuseSmemC, DelayTmaStore>,
                       fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>
    : fp4fuse::cutlass_ext::detail::layout_callbacks<fp4fuse::cutlass_ext::Sm100SwiGluQuantize<
          fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>, true> {
  using fp4fuse::cutlass_ext::detail::layout_callbacks<fp4fuse::cutlass_ext::Sm100SwiGluQuantize<
      fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile>, true>::layout_callbacks;
};

/// The dense sm100 collectives of CUTLASS 4.2 cannot leave D out (see the file comment): refused
/// with a sentence rather than with the collective's errors about a void shared-memory type.
template <int StagesC, int StagesD, int FragmentSize, bool ReuseSmemC, bool DelayTmaStore, class Format, class Activation, class Layout,
          class GateUp, class Intermediate, class CtaTileShapeMNK, class EpilogueTile>
struct FusionCallbacks<epilogue::Sm100TmaWarpSpecialized<StagesC, StagesD, FragmentSize, ReuseSmemC, DelayTmaStore>,
                       fp4fuse::cutlass_ext::SwiGluQuantize<Format, Activation, Layout, GateUp, Intermediate>, CtaTileShapeMNK, EpilogueTile> {
  static_assert(sizeof(Format) == 0,
                "fp4fuse SwiGluQuantize on sm100: CUTLASS 4.2's dense sm100 epilogue collectives always store D; use the ptr-array GEMM "
                "(epilogue::PtrArrayTmaWarpSpecialized1Sm/2Sm, KernelPtrArrayTmaWarpSpecialized1SmSm100/2SmSm100) with a grouped scale "
                "layout, one group for a dense output");
};

}  // namespace cutlass::epilogue::fusion
