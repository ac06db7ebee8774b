// Misuse of the CUTLASS adapter that must fail to compile with a sentence that says what to do
// (tests/static_errors.py compiles each case alone, with CUTLASS's headers). CASE=0 is the valid baseline.
#include <cute/tensor.hpp>

#include "fp4fuse/cutlass/sm100_swiglu_quantize.hpp"
#include "fp4fuse/cutlass/sm90_swiglu_quantize.hpp"

using cute::_128;
using cute::_256;
using cute::_48;
using cute::_64;
using cute::Shape;
using nvfp4 = fp4fuse::format::nvfp4<>;
using swizzled = fp4fuse::scale_layout::swizzled_128x4;
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
using policy = cutlass::epilogue::Sm90TmaWarpSpecialized<4, 2, 32, false, true>;

// Valid uses next to the cases, so that a failure is the case's own.
using good_op = fp4fuse::cutlass_ext::SwiGluQuantize<nvfp4, fp4fuse::activation::swiglu, swizzled>;
using good = cutlass::epilogue::fusion::FusionCallbacks<policy, good_op, Shape<_128, _256, _64>, Shape<_128, _64>>;
static_assert(sizeof(typename good::Arguments) > 0, "the dense callbacks");
using sm100_policy = cutlass::epilogue::Sm100PtrArrayTmaWarpSpecialized<4, 2, 64, false, false>;
using good_grouped_op = fp4fuse::cutlass_ext::SwiGluQuantize<nvfp4, fp4fuse::activation::swiglu, grouped>;
using good_sm100 = cutlass::epilogue::fusion::FusionCallbacks<sm100_policy, good_grouped_op, Shape<_128, _256, _64>, Shape<_128, _64>>;
static_assert(sizeof(typename good_sm100::Arguments) > 0, "the sm100 ptr-array callbacks");

#if CASE == 1  // expect: the accumulator fragment form needs gate and up interleaved by 8 along N
using bad = fp4fuse::cutlass_ext::SwiGluQuantize<nvfp4, fp4fuse::activation::swiglu, swizzled, fp4fuse::gate_up::interleaved<16>>;
static_assert(sizeof(bad) > 0);
#elif CASE == 2  // expect: the CTA tile's N must be a whole number of blocks of gate/up pairs
using bad = fp4fuse::cutlass_ext::Sm90SwiGluQuantize<good_op, Shape<_128, _48, _64>, Shape<_128, _48>>;
static_assert(sizeof(bad) > 0);
#elif CASE == 3  // expect: the epilogue tile's N must be a multiple of 32 (NVFP4) or 64 (MXFP4) gate/up columns
using bad = fp4fuse::cutlass_ext::Sm90SwiGluQuantize<good_op, Shape<_128, _256, _64>, Shape<_128, _48>>;
static_assert(sizeof(bad) > 0);
#elif CASE == 4  // expect: a grouped scale layout needs CUTLASS's ptr-array grouped GEMM
using bad_op = fp4fuse::cutlass_ext::SwiGluQuantize<nvfp4, fp4fuse::activation::swiglu, grouped>;
using bad = cutlass::epilogue::fusion::FusionCallbacks<policy, bad_op, Shape<_128, _256, _64>, Shape<_128, _64>>;
static_assert(sizeof(bad) > 0);
#elif CASE == 5  // expect: CUTLASS 4.2's dense sm100 epilogue collectives always store D; use the ptr-array GEMM
using bad = cutlass::epilogue::fusion::FusionCallbacks<cutlass::epilogue::Sm100TmaWarpSpecialized<4, 2, 64, false, false>, good_op,
                                                       Shape<_128, _256, _64>, Shape<_128, _64>>;
static_assert(sizeof(bad) > 0);
#elif CASE == 6  // expect: the CTA tile's and the epilogue tile's M must be 128
using bad = fp4fuse::cutlass_ext::Sm100SwiGluQuantize<good_grouped_op, Shape<_64, _256, _64>, Shape<_64, _64>>;
static_assert(sizeof(bad) > 0);
#elif CASE == 7  // expect: the ptr-array grouped GEMM writes a grouped scale layout
using bad = cutlass::epilogue::fusion::FusionCallbacks<sm100_policy, good_op, Shape<_128, _256, _64>, Shape<_128, _64>>;
static_assert(sizeof(bad) > 0);
#endif
