#pragma once
// The CUTLASS sm90 GEMMs the tests and the benchmark run: BF16 X [M, K] (row-major) times BF16
// W [N, K] (K-major, gate/up interleaved by 8 along N), fp32 accumulators, and either the fp4fuse
// node or CUTLASS's own linear-combination epilogue writing D (fp32 for the bit-exact reference,
// BF16 for the speed reference). The same mainloop in both, so the comparison isolates the epilogue.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "fp4fuse/cutlass/sm90_swiglu_quantize.hpp"

namespace fp4fuse_cutlass_test {

using namespace cute;

/// Kernel schedule pairs.
struct cooperative {
  using kernel = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
  static constexpr int epi_m = 128;
};
struct pingpong {
  using kernel = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using epilogue = cutlass::epilogue::TmaWarpSpecialized;
  static constexpr int epi_m = 64;
};

/// One GEMM: `Fusion` is the epilogue fusion operation, `ElementD` void for the fp4fuse node.
template <class Schedule, class TileShape, class ClusterShape, int EpiN, class Fusion, class ElementD>
struct sm90_gemm {
  using EpiTile = Shape<Int<Schedule::epi_m>, Int<EpiN>>;
  static constexpr int align_d = cute::is_void_v<ElementD> ? 8 : 128 / cutlass::sizeof_bits<ElementD>::value;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape, EpiTile, float, float, void, cutlass::layout::RowMajor,
      align_d, ElementD, cutlass::layout::RowMajor, align_d, typename Schedule::epilogue, Fusion>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::bfloat16_t, cutlass::layout::RowMajor, 8, cutlass::bfloat16_t,
      cutlass::layout::ColumnMajor, 8, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename Schedule::kernel>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  using FusionArguments = typename CollectiveEpilogue::FusionCallbacks::Arguments;

  /// The kernel's arguments for X [M, K], W [N, K], D (nullptr for the node).
  static typename Gemm::Arguments arguments(int M, int N, int K, const cutlass::bfloat16_t* X, const cutlass::bfloat16_t* W,
                                            void* D, const FusionArguments& fusion) {
    using D_t = cute::conditional_t<cute::is_void_v<ElementD>, float, ElementD>;
    const auto stride_a = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(M, K, 1));
    const auto stride_b = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(N, K, 1));
    const auto stride_d = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(M, N, 1));
    const auto stride_c = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(M, N, 1));
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {M, N, K, 1},
                                  {X, stride_a, W, stride_b},
                                  {fusion, nullptr, stride_c, static_cast<D_t*>(D), stride_d}};
    return args;
  }
};

using tile_128x256 = Shape<_128, _256, _64>;
using tile_64x256 = Shape<_64, _256, _64>;
using cluster_2x1 = Shape<_2, _1, _1>;
using cluster_1x1 = Shape<_1, _1, _1>;

template <class Format>
using node_op = fp4fuse::cutlass_ext::SwiGluQuantize<Format, fp4fuse::activation::swiglu>;
template <class Element>
using lincomb = cutlass::epilogue::fusion::LinearCombination<Element, float, void, float>;

}  // namespace fp4fuse_cutlass_test
