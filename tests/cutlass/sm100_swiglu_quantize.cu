// The fp4fuse node in CUTLASS's sm100 ptr-array grouped GEMM (BF16 X [M_e, K] times W_e [2I, K],
// fp32 accumulators in tensor memory, SwiGLU -> NVFP4 / MXFP4 into the grouped scale layout, no D),
// compiled for sm_100a: tests/cutlass/sm100_ptx.py builds this file and reads its PTX. Compiled
// only, never run (no Blackwell GPU here). The kernels are instantiated by taking their addresses.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/device_kernel.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "fp4fuse/cutlass/sm100_swiglu_quantize.hpp"

namespace fp4fuse_cutlass_sm100 {

using cute::_1;
using cute::_2;
using cute::_64;
using cute::_128;
using cute::_256;
using cute::Shape;

/// The sm100 ptr-array grouped GEMM with the node. `Sm` 1: one SM per 128 x N MMA tile; 2: a
/// 256 x N MMA tile over a 2 x 1 cluster (each CTA's epilogue: 128 rows).
template <class Format, int Sm>
struct sm100_grouped {
  using Op = fp4fuse::cutlass_ext::SwiGluQuantize<Format, fp4fuse::activation::swiglu,
                                                  fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>>;
  using MmaTile = cute::conditional_t<Sm == 1, Shape<_128, _256, _64>, Shape<_256, _256, _64>>;
  using Cluster = cute::conditional_t<Sm == 1, Shape<_1, _1, _1>, Shape<_2, _1, _1>>;
  using EpiSchedule = cute::conditional_t<Sm == 1, cutlass::epilogue::PtrArrayTmaWarpSpecialized1Sm, cutlass::epilogue::PtrArrayTmaWarpSpecialized2Sm>;
  using KernelSchedule =
      cute::conditional_t<Sm == 1, cutlass::gemm::KernelPtrArrayTmaWarpSpecialized1SmSm100, cutlass::gemm::KernelPtrArrayTmaWarpSpecialized2SmSm100>;
  using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, MmaTile, Cluster, Shape<_128, _64>, float, float, void, cutlass::layout::RowMajor*, 8,
      void, cutlass::layout::RowMajor*, 8, EpiSchedule, Op>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, cutlass::bfloat16_t, cutlass::layout::RowMajor*, 8, cutlass::bfloat16_t,
      cutlass::layout::ColumnMajor*, 8, float, MmaTile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Callbacks = typename CollectiveEpilogue::FusionCallbacks;
  // The builder picked the node (not CUTLASS's sm90 alias) and left D out.
  static_assert(cute::is_same_v<typename Callbacks::Node, fp4fuse::cutlass_ext::Sm100SwiGluQuantize<Op, Shape<_128, _256, _64>, Shape<_128, _64>>>,
                "the sm100 builder must pick fp4fuse's sm100 node (CTA tile 128 x 256, epilogue tile 128 x 64)");
  static_assert(cute::is_void_v<typename CollectiveEpilogue::ElementD> && cute::is_void_v<typename CollectiveEpilogue::ElementC>,
                "no D, no C");
};

using nvfp4_1sm = sm100_grouped<fp4fuse::format::nvfp4<>, 1>;
using mxfp4_1sm = sm100_grouped<fp4fuse::format::mxfp4<>, 1>;
using nvfp4_2sm = sm100_grouped<fp4fuse::format::nvfp4<>, 2>;

}  // namespace fp4fuse_cutlass_sm100

/// The kernels' device code: their addresses (the PTX check counts these entry points).
void* fp4fuse_cutlass_sm100_kernels[] = {
    reinterpret_cast<void*>(&cutlass::device_kernel<fp4fuse_cutlass_sm100::nvfp4_1sm::Kernel>),
    reinterpret_cast<void*>(&cutlass::device_kernel<fp4fuse_cutlass_sm100::mxfp4_1sm::Kernel>),
    reinterpret_cast<void*>(&cutlass::device_kernel<fp4fuse_cutlass_sm100::nvfp4_2sm::Kernel>),
};
