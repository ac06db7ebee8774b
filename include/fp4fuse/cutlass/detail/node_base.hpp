#pragma once
/// \file cutlass/detail/node_base.hpp
/// What the sm90 and sm100 nodes share: the host side of CUTLASS's visitor protocol (arguments,
/// `can_implement`, no workspace, no producer loads), and the consumer's per-CTA-tile state (the
/// group's output and codec, the scale padding beyond the tile grid at the end) for the sm100 node.
/// The sm90 node keeps its own tile state: deriving it from `node_tile` put the MXFP4 cooperative
/// kernel's state on a 224-byte stack.
#include <cstdio>

#include <cuda/std/cstdint>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/fusion/callbacks.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>

#include "fp4fuse/cutlass/detail/library.hpp"

namespace fp4fuse::cutlass_ext::detail {

/// The host side and the parameters of a node for `Op` (a CUTLASS EVT store node over one child).
template <class Op>
struct node_base {
  struct SharedStorage {};
  using Arguments = SwiGluQuantizeArguments<Op>;
  using Params = Arguments;

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args, void*) {
    return args;
  }

  /// False, with the reason on stderr, when the problem does not fit the output descriptor.
  template <class ProblemShape>
  static bool can_implement(ProblemShape const& problem_shape, Arguments const& args) {
    auto mnkl = cute::append<4>(problem_shape, 1);
    const char* error = problem_error<Op>(cute::get<0>(mnkl), cute::get<1>(mnkl), cute::get<3>(mnkl), args);
    if (error != nullptr) std::fprintf(stderr, "%s\n", error);
    return error == nullptr;
  }

  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&) {
    return 0;
  }

  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, Arguments const&, void*, cudaStream_t, cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }

  CUTLASS_DEVICE bool is_producer_load_needed() const { return false; }
  CUTLASS_DEVICE bool is_C_load_needed() const { return false; }

  CUTLASS_HOST_DEVICE node_base() {}
  CUTLASS_HOST_DEVICE node_base(Params const& params, SharedStorage const&) : params(params) {}

  Params params;

  template <class... Args>
  CUTLASS_DEVICE auto get_producer_load_callbacks(cutlass::epilogue::fusion::detail::ProducerLoadArgs<Args...> const&) {
    return cutlass::epilogue::fusion::EmptyProducerLoadCallbacks{};
  }
};

/// A consumer's state for one CTA tile (TileM x TileN of the [M, N] gate/up accumulator) of
/// group l (the tile coordinate's last mode; 0 in a dense GEMM): where the group's output is, its
/// codec, and the thread's first accumulator's row and column (from the collective's residue).
template <class Op, int TileM, int TileN, class TileCoord>
struct node_tile {
  TileCoord tile;  // (m, n, k, l)
  cuda::std::int64_t M, N;
  int thread_idx;
  SwiGluQuantizeArguments<Op> const& params;
  cuda::std::int64_t first_row, first_col;  // the thread's first accumulator's row and column in D (of its group)
  int group;
  typename library<Op>::dense_output out;
  typename library<Op>::codec_type codec;

  template <class ProblemShapeMNKL, class Residue>
  CUTLASS_DEVICE node_tile(ProblemShapeMNKL const& mnkl, TileCoord tile, Residue const& residue_tCcD, int thread_idx, SwiGluQuantizeArguments<Op> const& params)
      : tile(tile), M(cute::get<0>(mnkl)), N(cute::get<1>(mnkl)), thread_idx(thread_idx), params(params),
        // residue_tCcD = (M, N) - the thread's first coordinate.
        first_row(M - static_cast<cuda::std::int64_t>(cute::get<0>(residue_tCcD))),
        first_col(N - static_cast<cuda::std::int64_t>(cute::get<1>(residue_tCcD))), group(static_cast<int>(cute::get<3>(tile))),
        out(library<Op>::group_output(params, group, M)), codec(library<Op>::codec(params, group)) {}

  /// The scale padding beyond the CTA-tile grid that this tile owns (all `threads` of the epilogue).
  CUTLASS_DEVICE void pad_beyond_grid(int threads) const {
    library<Op>::template pad_tile_beyond_grid<TileM, TileN>(out, cute::get<0>(tile), cute::get<1>(tile), M, N, thread_idx, threads);
  }
};

/// What the architectures' `FusionCallbacks` specialisations are: `NodeType` (a store node with
/// `operation_type`) over the accumulator, with the node's arguments as the callbacks' arguments,
/// for one kind of GEMM: `Grouped` (a ptr-array grouped GEMM: group e writes expert e's rows and
/// scale block) needs a grouped scale layout, a dense GEMM a dense one.
template <class NodeType, bool Grouped>
struct layout_callbacks : cutlass::epilogue::fusion::Sm90EVT<NodeType, cutlass::epilogue::fusion::Sm90AccFetch> {
  using Node = NodeType;
  using Operation = typename Node::operation_type;
  using Impl = cutlass::epilogue::fusion::Sm90EVT<Node, cutlass::epilogue::fusion::Sm90AccFetch>;
  using Layout = typename Operation::layout_type;
  static_assert(Grouped || !scale_layout::is_grouped<Layout>,
                "fp4fuse SwiGluQuantize: a grouped scale layout needs CUTLASS's ptr-array grouped GEMM (KernelPtrArrayTmaWarpSpecialized*), "
                "not the dense GemmUniversal");
  static_assert(!Grouped || scale_layout::is_grouped<Layout>,
                "fp4fuse SwiGluQuantize: the ptr-array grouped GEMM writes a grouped scale layout (scale_layout::grouped_swizzled_128x4<ExpertStart>; "
                "one group for a dense output)");

  /// `fp4fuse::cutlass_ext::SwiGluQuantizeArguments` (its fields: out, encode_scale, activation,
  /// bias, amax, and the two group strides, which matter only in a grouped GEMM), as the EVT's
  /// arguments (the accumulator child takes none).
  struct Arguments : SwiGluQuantizeArguments<Operation> {
    operator typename Impl::Arguments() const { return {{}, static_cast<const SwiGluQuantizeArguments<Operation>&>(*this)}; }
  };

  using Impl::Impl;
};

}  // namespace fp4fuse::cutlass_ext::detail
