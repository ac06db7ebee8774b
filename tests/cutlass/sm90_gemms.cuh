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
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "fp4fuse/cutlass/sm90_swiglu_quantize.hpp"

namespace fp4fuse_cutlass_test {

// Using-declarations, not a using-directive: `using namespace cute` would pull CuTe's unnamed
// namespace into every includer's and make nvcc's registration stub ambiguous.
using cute::_1;
using cute::_2;
using cute::_64;
using cute::_128;
using cute::_256;
using cute::Int;
using cute::Shape;

/// A kernel schedule and its epilogue schedule; EpiM: the epilogue subtile's M, the MMA tile's
/// (128 cooperative: both consumer warp groups on one tile; 64 ping-pong: one warp group per tile).
template <class Kernel, class Epilogue, int EpiM>
struct schedule_pair {
  using kernel = Kernel;
  using epilogue = Epilogue;
  static constexpr int epi_m = EpiM;
};
using cooperative = schedule_pair<cutlass::gemm::KernelTmaWarpSpecializedCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative, 128>;
using pingpong = schedule_pair<cutlass::gemm::KernelTmaWarpSpecializedPingpong, cutlass::epilogue::TmaWarpSpecialized, 64>;
/// The ptr-array grouped GEMM's pairs.
using grouped_cooperative = schedule_pair<cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
                                          cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative, 128>;
using grouped_pingpong = schedule_pair<cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong,
                                       cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong, 64>;

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

/// The ptr-array grouped GEMM (group e: X rows of expert e times W_e): `Fusion` the node over a
/// grouped scale layout and `ElementD` void, or CUTLASS's linear combination writing D (group e's
/// rows of one [rows, N] matrix) for the speed reference.
template <class Schedule, class TileShape, class ClusterShape, int EpiN, class Fusion, class ElementD = void>
struct sm90_grouped_gemm {
  using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;
  using EpiTile = Shape<Int<Schedule::epi_m>, Int<EpiN>>;
  static constexpr bool has_d = !cute::is_void_v<ElementD>;
  using D_t = cute::conditional_t<has_d, ElementD, float>;  ///< D's element where there is one
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape, EpiTile, float, float, void, cutlass::layout::RowMajor*, 8,
      ElementD, cutlass::layout::RowMajor*, 8, typename Schedule::epilogue, Fusion>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::bfloat16_t, cutlass::layout::RowMajor*, 8, cutlass::bfloat16_t,
      cutlass::layout::ColumnMajor*, 8, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      typename Schedule::kernel>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Gemm::GemmKernel::InternalStrideA;
  using StrideB = typename Gemm::GemmKernel::InternalStrideB;
  using StrideC = typename Gemm::GemmKernel::InternalStrideC;
  using StrideD = typename Gemm::GemmKernel::InternalStrideD;
  using FusionArguments = typename CollectiveEpilogue::FusionCallbacks::Arguments;

  /// Device arrays of one launch, filled on the device from the experts' offsets.
  struct device_problem {
    typename ProblemShape::UnderlyingProblemShape* shapes = nullptr;
    const cutlass::bfloat16_t** a = nullptr;
    const cutlass::bfloat16_t** b = nullptr;
    StrideA* stride_a = nullptr;
    StrideB* stride_b = nullptr;
    StrideC* stride_c = nullptr;
    StrideD* stride_d = nullptr;
    D_t** d = nullptr;  ///< group e's D (only with ElementD)
  };

  static typename Gemm::Arguments arguments(int experts, const device_problem& p, const FusionArguments& fusion, int sms) {
    cutlass::KernelHardwareInfo hw{};
    hw.device_id = 0;
    hw.sm_count = sms;
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGrouped,
                                  {experts, p.shapes, nullptr},
                                  {p.a, p.stride_a, p.b, p.stride_b},
                                  {fusion, nullptr, p.stride_c, nullptr, p.stride_d},
                                  hw};
    if constexpr (has_d) args.epilogue.ptr_D = p.d;
    return args;
  }
};

/// Fills the grouped GEMM's device arrays from the experts' offsets (device memory, E + 1 entries):
/// group e is X[offsets[e] : offsets[e + 1]] [M_e, K] times W[e] [N, K], into D's same rows when
/// p.d is set. One thread per expert.
template <class G>
__global__ void make_grouped_problem(typename G::device_problem p, const int* offsets, int experts, const cutlass::bfloat16_t* X,
                                     const cutlass::bfloat16_t* W, int N, int K, typename G::D_t* D = nullptr) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= experts) return;
  const int M = offsets[e + 1] - offsets[e];
  p.shapes[e] = {M, N, K};
  p.a[e] = X + static_cast<std::int64_t>(offsets[e]) * K;
  p.b[e] = W + static_cast<std::int64_t>(e) * N * K;
  p.stride_a[e] = cutlass::make_cute_packed_stride(typename G::StrideA{}, cute::make_shape(M, K, 1));
  p.stride_b[e] = cutlass::make_cute_packed_stride(typename G::StrideB{}, cute::make_shape(N, K, 1));
  p.stride_c[e] = cutlass::make_cute_packed_stride(typename G::StrideC{}, cute::make_shape(M, N, 1));
  p.stride_d[e] = cutlass::make_cute_packed_stride(typename G::StrideD{}, cute::make_shape(M, N, 1));
  if (p.d != nullptr) p.d[e] = D + static_cast<std::int64_t>(offsets[e]) * N;
}

using tile_128x256 = Shape<_128, _256, _64>;
using tile_64x256 = Shape<_64, _256, _64>;
using tile_128x128 = Shape<_128, _128, _64>;
using tile_64x128 = Shape<_64, _128, _64>;
using cluster_2x1 = Shape<_2, _1, _1>;
using cluster_1x1 = Shape<_1, _1, _1>;

template <class Format>
using node_op = fp4fuse::cutlass_ext::SwiGluQuantize<Format, fp4fuse::activation::swiglu>;
template <class Format, class ExpertStart>
using grouped_node_op = fp4fuse::cutlass_ext::SwiGluQuantize<Format, fp4fuse::activation::swiglu, fp4fuse::scale_layout::grouped_swizzled_128x4<ExpertStart>>;
template <class Element>
using lincomb = cutlass::epilogue::fusion::LinearCombination<Element, float, void, float>;

}  // namespace fp4fuse_cutlass_test
