// The sm_90a engine's kernels as the library's launchers instantiate them: the grouped MoE L1
// (fused NVFP4 with SwiGLU and with GPT-OSS's clamped SwiGLU, BF16 gate/up, BF16 SwiGLU; each
// launcher branches on the inputs' bias at run time, so each call instantiates the kernels with and
// without bias; each flow with the planned kernels and with every kernel a forced plan may name,
// experimental_kernels, the fused one's swap-AB kernel included) and the dense GEMM (BF16
// store, fused NVFP4), for tests/compile/engine_wgmma.py, which compiles this file with ptxas's
// report on and fails on any "Potential Performance Loss" (C75xx: wgmma serialized). Device code
// only.
#include <fp4fuse/gemm/dense.cuh>
#include <fp4fuse/gemm/grouped.cuh>

namespace moe = fp4fuse::gemm::moe;
using start_t = fp4fuse::scale_layout::expert_start::offset_bound;

fp4fuse::result grouped_fused(const moe::inputs& in, const moe::grouped_output<start_t>& out, const float* s) {
  return moe::run_fused(in, out, fp4fuse::global_scale::per_tensor{s}, fp4fuse::activation::swiglu{});
}
fp4fuse::result grouped_fused_clamped(const moe::inputs& in, const moe::grouped_output<start_t>& out, const float* s) {
  return moe::run_fused(in, out, fp4fuse::global_scale::per_tensor{s}, fp4fuse::activation::swiglu_clamped{});
}
// The experimental swap-AB kernel (forced plans only), which run_fused compiles on request.
fp4fuse::result grouped_fused_experimental(const moe::inputs& in, const moe::grouped_output<start_t>& out, const float* s) {
  return moe::run_fused<fp4fuse::intermediate::fp32, fp4fuse::gemm::sm90::experimental_kernels>(in, out, fp4fuse::global_scale::per_tensor{s},
                                                                                                 fp4fuse::activation::swiglu{});
}
fp4fuse::result grouped_fused_clamped_experimental(const moe::inputs& in, const moe::grouped_output<start_t>& out, const float* s) {
  return moe::run_fused<fp4fuse::intermediate::fp32, fp4fuse::gemm::sm90::experimental_kernels>(in, out, fp4fuse::global_scale::per_tensor{s},
                                                                                                 fp4fuse::activation::swiglu_clamped{});
}
fp4fuse::result grouped_bf16(const moe::inputs& in, fp4fuse::matrix_view<__nv_bfloat16> gate_up, int experts, const std::int32_t* offsets) {
  return moe::run_bf16(in, gate_up, experts, offsets);
}
fp4fuse::result grouped_swiglu_bf16(const moe::inputs& in, fp4fuse::matrix_view<__nv_bfloat16> h, int experts, const std::int32_t* offsets) {
  return moe::run_swiglu_bf16(in, h, fp4fuse::activation::swiglu{}, experts, offsets);
}
// Every grouped kernel of the BF16 flows, which forced plans may name (experimental_kernels).
fp4fuse::result grouped_bf16_experimental(const moe::inputs& in, fp4fuse::matrix_view<__nv_bfloat16> gate_up, int experts,
                                          const std::int32_t* offsets) {
  return moe::run_bf16<fp4fuse::gemm::sm90::experimental_kernels>(in, gate_up, experts, offsets);
}
fp4fuse::result grouped_swiglu_bf16_experimental(const moe::inputs& in, fp4fuse::matrix_view<__nv_bfloat16> h, int experts,
                                                 const std::int32_t* offsets) {
  return moe::run_swiglu_bf16<fp4fuse::gemm::sm90::experimental_kernels>(in, h, fp4fuse::activation::swiglu{}, experts, offsets);
}
fp4fuse::result dense_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w, fp4fuse::matrix_view<__nv_bfloat16> d, int K) {
  return fp4fuse::gemm::gemm(x, w, static_cast<int>(d.rows), static_cast<int>(d.cols), K, fp4fuse::gemm::store_bf16{d},
                             fp4fuse::gemm::engine::wgmma);
}
fp4fuse::result dense_fused(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K,
                            const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>& out,
                            const float* s) {
  const fp4fuse::gemm::swiglu_nvfp4<fp4fuse::activation::swiglu> epi{out, s, {}};
  return fp4fuse::gemm::gemm(x, w, M, N, K, epi, fp4fuse::gemm::engine::wgmma);
}
