// The C ABI of fp4fuse's device functions (declared in fp4fuse_c.h), compiled by clang to LLVM
// bitcode for CuTe DSL and Triton. Each function calls one instantiation of the library's
// templates and nothing else: no numerics are written here. The target of the pass (software
// E2M1 on sm_80..sm_90a, the hardware `cvt` on sm_100a/sm_120a) comes from config.cuh's predicates.
#include "fp4fuse_c.h"

#include <fp4fuse/activation.cuh>
#include <fp4fuse/e2m1.cuh>
#include <fp4fuse/e4m3.cuh>
#include <fp4fuse/epilogue/row.cuh>
#include <fp4fuse/global_scale.cuh>
#include <fp4fuse/mxfp4.cuh>
#include <fp4fuse/nvfp4.cuh>
#include <fp4fuse/ue8m0.cuh>

namespace {

using nv_te = fp4fuse::format::nvfp4<fp4fuse::recipe::te_exact>;
using nv_vllm = fp4fuse::format::nvfp4<fp4fuse::recipe::vllm>;
using mx_ocp = fp4fuse::format::mxfp4<fp4fuse::recipe::mx_ocp>;
using mx_up = fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>;

template <int N>
__device__ __forceinline__ const float (&as_array(const float* p))[N] {
  return *reinterpret_cast<const float(*)[N]>(p);
}

template <class Format>
__device__ __forceinline__ fp4fuse::block_codec<Format> codec_of(float S) {
  return fp4fuse::make_block_codec<Format>(S);  // MXFP4 ignores S
}

template <class Format>
__device__ __forceinline__ void quantize_block(const float* x, float S, uint32_t* packed, uint8_t* scale) {
  const auto b = codec_of<Format>(S).quantize(as_array<Format::block_size>(x));
#pragma unroll
  for (int w = 0; w < Format::words_per_block; ++w) packed[w] = b.packed[w];
  *scale = b.scale;
}

template <class Row>
__device__ __forceinline__ void store_row(const Row& q, uint32_t* packed, uint8_t* scales, float* amax) {
  constexpr int words = sizeof(q.blocks[0].packed) / sizeof(q.blocks[0].packed[0]);
#pragma unroll
  for (int b = 0; b < Row::blocks_per_row; ++b) {
#pragma unroll
    for (int w = 0; w < words; ++w) packed[b * words + w] = q.blocks[b].packed[w];
    scales[b] = q.blocks[b].scale;
  }
  *amax = q.amax();
}

// The description's type spelled out: clang-CUDA treats deduction guides as host functions, so
// class template argument deduction of fused_epilogue fails in its device code (nvcc accepts it).
template <class Format, class Activation, class GateUp, class Bias>
using op_t = fp4fuse::fused_epilogue<Format, fp4fuse::sink::hand_back, Activation, GateUp, Bias>;

// The row form through the library's description (fused_epilogue, sink::hand_back) at origin
// {0, 0}: the bias pointer is relative to the thread's segment, as the library's column_bias is to
// the gate/up column of the origin. A null bias selects no_bias (nothing added).
template <class Format, class Activation, int Out>
__device__ __forceinline__ void row_interleaved(const float* acc, const float* bias, int64_t bias_count, float S,
                                                uint32_t* packed, uint8_t* scales, float* amax) {
  const fp4fuse::tile_origin origin{0, 0};
  if (bias != nullptr) {
    const op_t<Format, Activation, fp4fuse::gate_up::interleaved<8>, fp4fuse::column_bias> op{
        codec_of<Format>(S), {}, Activation{}, {}, fp4fuse::column_bias{bias, bias_count}};
    store_row(fp4fuse::row_epilogue(op, as_array<2 * Out>(acc), origin), packed, scales, amax);
  } else {
    const op_t<Format, Activation, fp4fuse::gate_up::interleaved<8>, fp4fuse::no_bias> op{codec_of<Format>(S), {}, Activation{}};
    store_row(fp4fuse::row_epilogue(op, as_array<2 * Out>(acc), origin), packed, scales, amax);
  }
}

// Separate gate and up with their own bias arrays (gate_bias[j], up_bias[j] for j < bias_count):
// the library's column_bias holds both halves in one array, so each half's bias is added here by
// that type's own add (the same fp32 v + b, columns past the count unchanged) before the no-bias
// row form.
template <class Format, class Activation, int Out>
__device__ __forceinline__ void row_separate(const float* gate, const float* up, const float* gate_bias, const float* up_bias,
                                             int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax) {
  float g[Out], u[Out];
  const fp4fuse::column_bias gb{gate_bias, gate_bias != nullptr ? bias_count : 0};
  const fp4fuse::column_bias ub{up_bias, up_bias != nullptr ? bias_count : 0};
#pragma unroll
  for (int j = 0; j < Out; ++j) {
    g[j] = gb.add(gate[j], j);
    u[j] = ub.add(up[j], j);
  }
  const op_t<Format, Activation, fp4fuse::gate_up::separate, fp4fuse::no_bias> op{codec_of<Format>(S), {}, Activation{}};
  store_row(fp4fuse::row_epilogue(op, g, u, fp4fuse::tile_origin{0, 0}), packed, scales, amax);
}

}  // namespace

// ---- conversions ------------------------------------------------------------------------------
extern "C" __device__ uint32_t fp4fuse_e2m1x8(float a0, float a1, float a2, float a3, float a4, float a5, float a6, float a7) {
  const float v[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  return fp4fuse::e2m1x8_encode(v);
}
extern "C" __device__ uint32_t fp4fuse_e2m1_encode(float x) { return fp4fuse::e2m1_encode(x); }
extern "C" __device__ uint32_t fp4fuse_e4m3_encode(float x) { return fp4fuse::e4m3_encode(x); }
extern "C" __device__ float fp4fuse_e2m1_decode(uint32_t nibble) { return fp4fuse::e2m1_decode(static_cast<uint8_t>(nibble & 0xFu)); }
extern "C" __device__ float fp4fuse_e4m3_decode(uint32_t byte) { return fp4fuse::e4m3_decode(static_cast<uint8_t>(byte)); }
extern "C" __device__ float fp4fuse_ue8m0_decode(uint32_t byte) { return fp4fuse::ue8m0_decode(static_cast<uint8_t>(byte)); }

// ---- scales -----------------------------------------------------------------------------------
extern "C" __device__ float fp4fuse_nvfp4_global_encode_scale(float amax) { return fp4fuse::nvfp4_global_encode_scale(amax); }

#define FP4FUSE_C_NV_SCALE(name, F)                                                                               \
  extern "C" __device__ uint32_t fp4fuse_nvfp4_##name##_scale_code(float block_amax, float S) {                    \
    return codec_of<F>(S).scale_for(block_amax).code;                                                              \
  }                                                                                                                \
  extern "C" __device__ float fp4fuse_nvfp4_##name##_multiplier(float block_amax, float S) {                       \
    return codec_of<F>(S).scale_for(block_amax).multiplier;                                                        \
  }
#define FP4FUSE_C_MX_SCALE(name, F)                                                                               \
  extern "C" __device__ uint32_t fp4fuse_mxfp4_##name##_scale_code(float block_amax) {                             \
    return codec_of<F>(1.0f).scale_for(block_amax).code;                                                           \
  }                                                                                                                \
  extern "C" __device__ float fp4fuse_mxfp4_##name##_multiplier(float block_amax) {                                \
    return codec_of<F>(1.0f).scale_for(block_amax).multiplier;                                                     \
  }
FP4FUSE_C_NV_SCALE(te_exact, nv_te)
FP4FUSE_C_NV_SCALE(vllm, nv_vllm)
FP4FUSE_C_MX_SCALE(mx_ocp, mx_ocp)
FP4FUSE_C_MX_SCALE(mx_round_up, mx_up)

extern "C" __device__ float fp4fuse_nvfp4_block_amax(const float* x) { return fp4fuse::block_codec<nv_te>::block_amax(as_array<16>(x)); }
extern "C" __device__ float fp4fuse_mxfp4_block_amax(const float* x) { return fp4fuse::block_codec<mx_ocp>::block_amax(as_array<32>(x)); }
extern "C" __device__ float fp4fuse_nvfp4_combine_amax(float a, float b) { return fp4fuse::block_codec<nv_te>::combine_amax(a, b); }
extern "C" __device__ float fp4fuse_mxfp4_combine_amax(float a, float b) { return fp4fuse::block_codec<mx_ocp>::combine_amax(a, b); }

// ---- gated activations --------------------------------------------------------------------------
extern "C" __device__ float fp4fuse_swiglu(float gate, float up) { return fp4fuse::activation::swiglu{}.apply(gate, up); }
extern "C" __device__ float fp4fuse_swiglu_fast(float gate, float up) { return fp4fuse::activation::swiglu_fast{}.apply(gate, up); }
extern "C" __device__ float fp4fuse_swiglu_clamped(float gate, float up) { return fp4fuse::activation::swiglu_clamped{}.apply(gate, up); }
extern "C" __device__ float fp4fuse_swiglu_clamped_fast(float gate, float up) {
  return fp4fuse::activation::swiglu_clamped_fast{}.apply(gate, up);
}
extern "C" __device__ float fp4fuse_geglu_tanh(float gate, float up) { return fp4fuse::activation::geglu_tanh{}.apply(gate, up); }

// ---- block quantize -----------------------------------------------------------------------------
extern "C" __device__ void fp4fuse_nvfp4_te_exact_quantize(const float* x, float S, uint32_t* packed, uint8_t* scale) {
  quantize_block<nv_te>(x, S, packed, scale);
}
extern "C" __device__ void fp4fuse_nvfp4_vllm_quantize(const float* x, float S, uint32_t* packed, uint8_t* scale) {
  quantize_block<nv_vllm>(x, S, packed, scale);
}
extern "C" __device__ void fp4fuse_mxfp4_mx_ocp_quantize(const float* x, uint32_t* packed, uint8_t* scale) {
  quantize_block<mx_ocp>(x, 1.0f, packed, scale);
}
extern "C" __device__ void fp4fuse_mxfp4_mx_round_up_quantize(const float* x, uint32_t* packed, uint8_t* scale) {
  quantize_block<mx_up>(x, 1.0f, packed, scale);
}

// ---- fused row form -----------------------------------------------------------------------------
// NVFP4 takes S; MXFP4 has no tensor scale (its codec ignores the 1.0f given here).
#define FP4FUSE_C_ROW_NV(act, rec, F, Out)                                                                                \
  extern "C" __device__ void fp4fuse_row_##act##_nvfp4_##rec##_i8_o##Out(const float* acc, const float* bias,              \
                                                                          int64_t bias_count, float S, uint32_t* packed,   \
                                                                          uint8_t* scales, float* amax) {                  \
    row_interleaved<F, fp4fuse::activation::act, Out>(acc, bias, bias_count, S, packed, scales, amax);                     \
  }                                                                                                                        \
  extern "C" __device__ void fp4fuse_row_##act##_nvfp4_##rec##_sep_o##Out(                                                 \
      const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S,       \
      uint32_t* packed, uint8_t* scales, float* amax) {                                                                    \
    row_separate<F, fp4fuse::activation::act, Out>(gate, up, gate_bias, up_bias, bias_count, S, packed, scales, amax);     \
  }
#define FP4FUSE_C_ROW_MX(act, rec, F, Out)                                                                                \
  extern "C" __device__ void fp4fuse_row_##act##_mxfp4_##rec##_i8_o##Out(const float* acc, const float* bias,              \
                                                                          int64_t bias_count, uint32_t* packed,            \
                                                                          uint8_t* scales, float* amax) {                  \
    row_interleaved<F, fp4fuse::activation::act, Out>(acc, bias, bias_count, 1.0f, packed, scales, amax);                  \
  }                                                                                                                        \
  extern "C" __device__ void fp4fuse_row_##act##_mxfp4_##rec##_sep_o##Out(const float* gate, const float* up,              \
                                                                           const float* gate_bias, const float* up_bias,   \
                                                                           int64_t bias_count, uint32_t* packed,           \
                                                                           uint8_t* scales, float* amax) {                 \
    row_separate<F, fp4fuse::activation::act, Out>(gate, up, gate_bias, up_bias, bias_count, 1.0f, packed, scales, amax);  \
  }
#define FP4FUSE_C_ROW_ACTS(M, rec, F, Out) \
  M(swiglu, rec, F, Out) M(swiglu_fast, rec, F, Out) M(swiglu_clamped, rec, F, Out) M(swiglu_clamped_fast, rec, F, Out)

FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_NV, te_exact, nv_te, 16)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_NV, te_exact, nv_te, 32)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_NV, vllm, nv_vllm, 16)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_NV, vllm, nv_vllm, 32)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_MX, mx_ocp, mx_ocp, 32)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_MX, mx_ocp, mx_ocp, 64)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_MX, mx_round_up, mx_up, 32)
FP4FUSE_C_ROW_ACTS(FP4FUSE_C_ROW_MX, mx_round_up, mx_up, 64)
