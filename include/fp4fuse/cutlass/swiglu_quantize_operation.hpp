#pragma once
/// \file cutlass/swiglu_quantize_operation.hpp
/// What the CUTLASS epilogue fusion computes, apart from how any architecture computes it (CUTLASS's
/// own split between its fusion operations and its sm90 callbacks): the GEMM's [M, 2I]
/// accumulators, gate and up interleaved by 8 along N, optionally plus a per-column fp32 bias, go
/// through a gated activation and out as a packed FP4 matrix [M, I] with its block scales in an
/// fp4fuse scale layout, optionally with the output amax. No D tensor is written (pass `void` as
/// the collective's ElementD and ElementC).
///
/// Needs the CUTLASS 3.x/4.x headers (tested: the `nvidia-cutlass` 4.2.0.0 wheel's
/// `cutlass_library/source/include`); the core of fp4fuse never includes this.
/// \code // not compiled: needs the CUTLASS headers (tests/cutlass/sm90_gemms.cuh compiles the same lines)
/// using Op = fp4fuse::cutlass_ext::SwiGluQuantize<fp4fuse::format::nvfp4<>, fp4fuse::activation::swiglu>;
/// // CollectiveBuilder<Sm90, TmaWarpSpecialized..., void, LayoutC, 8, void, LayoutD, 8, Schedule, Op>
/// \endcode
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cutlass/epilogue/fusion/operations.hpp>

#include "fp4fuse/activation.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/gate_up_layout.cuh"
#include "fp4fuse/intermediate.cuh"
#include "fp4fuse/scale_layout.cuh"

namespace fp4fuse::cutlass_ext {

/// The fused SwiGLU (or any fp4fuse gated activation) -> NVFP4/MXFP4 epilogue operation.
/// \tparam Format       `format::nvfp4<Recipe>` (E4M3 scales, global encode scale S in device memory)
///                      or `format::mxfp4<Recipe>` (UE8M0 scales)
/// \tparam Activation   `activation::swiglu`, `swiglu_clamped`, `geglu_tanh`, ... (by value in the arguments)
/// \tparam Layout       the scale layout: `scale_layout::swizzled_128x4` (what Blackwell's block-scaled
///                      MMAs read) or `scale_layout::linear` for the dense GEMM;
///                      `scale_layout::grouped_swizzled_128x4<ExpertStart>` for the ptr-array grouped
///                      GEMM (group e = expert e, its rows [expert_offsets[e], expert_offsets[e + 1]))
/// \tparam GateUp       the B operand's gate/up column order; only `gate_up::interleaved<8>` (the
///                      accumulator fragment then holds gate and up in neighbouring n8 tiles)
/// \tparam Intermediate `intermediate::fp32` (h in fp32) or `intermediate::bf16` (h rounded to BF16 first)
template <class Format = format::nvfp4<>, class Activation = activation::swiglu, class Layout = scale_layout::swizzled_128x4,
          class GateUp = gate_up::interleaved<8>, class Intermediate = intermediate::fp32>
struct SwiGluQuantize : cutlass::epilogue::fusion::FusionOperation {
  static_assert(fp4fuse::detail::is_format<Format>, "fp4fuse::cutlass_ext::SwiGluQuantize: Format must be format::nvfp4<R> or format::mxfp4<R>");
  static_assert(cuda::std::is_same_v<GateUp, gate_up::interleaved<8>>,
                "fp4fuse::cutlass_ext::SwiGluQuantize: the accumulator fragment form needs gate and up interleaved by 8 along N "
                "(gate_up::interleaved<8>: B's rows 16k..16k+7 gate, 16k+8..16k+15 up); reorder the weight first");
  using format_type = Format;              ///< NVFP4 or MXFP4 with its recipe
  using activation_type = Activation;      ///< the activation of gate
  using layout_type = Layout;              ///< the scale layout (dense, or grouped per expert)
  using gate_up_type = GateUp;             ///< gate/up interleaved by 8 along N
  using intermediate_type = Intermediate;  ///< fp32, or rounded to bf16 before quantizing

  using ElementOutput = cutlass::float_e2m1_t;  ///< the packed output's element (CUTLASS's name)
  using ElementCompute = float;                 ///< the activation's arithmetic
  using ElementBias = float;                    ///< the per-column bias
  static constexpr bool IsPerColBiasSupported = true;  ///< a bias per gate/up column, added before the activation
  static constexpr bool IsAbsMaxSupported = true;      ///< the output amax (for the next step's global scale)
  using ElementAmax = float;                           ///< the output amax's type
  static constexpr int SFVecSize = Format::block_size;  ///< outputs per block scale: 16 (NVFP4), 32 (MXFP4)
  /// Off: CUTLASS's own block-scale path (sm100 builders) would take over the scale factor store.
  static constexpr bool IsBlockScaleSupported = false;
  /// E4M3 (NVFP4) or UE8M0 (MXFP4) scales (CUTLASS's name).
  using ElementBlockScaleFactor = cuda::std::conditional_t<fp4fuse::detail::is_nvfp4<Format>, cutlass::float_ue4m3_t, cutlass::float_ue8m0_t>;
  /// Not an aux tensor: with D = void the sm90 collective still sizes an (unused) shared-memory D
  /// buffer and its register staging with this type; one byte keeps that buffer small, so the
  /// mainloop gets as many stages as the same GEMM writing BF16 (with float it got one fewer).
  using ElementAux = cuda::std::uint8_t;
};

}  // namespace fp4fuse::cutlass_ext
