/* fp4fuse_c.h: the C ABI of fp4fuse's device functions, as linked into CuTe DSL and Triton kernels
 * from LLVM bitcode (fp4fuse_sm80.bc, fp4fuse_sm90a.bc, fp4fuse_sm100a.bc, fp4fuse_sm120a.bc: the
 * same symbols; the software E2M1 path below sm_100, the hardware `cvt` path on sm_100a/sm_120a).
 * Every function is a thin wrapper over one instantiation of the library's templates
 * (fp4fuse_c.cu): the bits are the library's.
 *
 * Conventions
 * - Scalars are passed flat; arrays by pointer (any address space; a DSL register fragment's
 *   pointer is inlined away). Pointer arguments must not be null unless documented.
 * - A packed word holds 8 E2M1 nibbles, element i in bits 4i+3..4i (the library's packed order).
 * - Scale codes are returned in the low 8 bits of a uint32_t (elementwise) or stored as uint8_t.
 * - S is NVFP4's global encode scale (fp4fuse_nvfp4_global_encode_scale of the tensor amax):
 *   finite and > 0, as fp4fuse::block_codec requires (the S function returns such a value).
 * - Activations use the library's default parameters (clamped: alpha 1.702, limit 7).
 *
 * Row form (one thread's gate/up values -> whole quantized blocks, no data exchanged between
 * threads), fp4fuse::row_epilogue (sink::hand_back) with intermediate::fp32:
 *   fp4fuse_row_<act>_<format>_<recipe>_i8_o<Out>(acc[2 Out], bias, bias_count, [S,] packed[Out/8], scales[Out/B], amax)
 *     gate/up interleaved by 8 in acc (gate_up::interleaved<8>), starting on a 16-column boundary.
 *   fp4fuse_row_<act>_<format>_<recipe>_sep_o<Out>(gate[Out], up[Out], gate_bias, up_bias, bias_count, [S,] packed, scales, amax)
 *     gate and up in separate arrays (gate_up::separate).
 *   bias (gate_bias, up_bias) may be null (no bias); otherwise value i is read for i < bias_count
 *   only (columns past the matrix). i8: bias holds the gate/up columns in acc's order (interleaved
 *   by 8) from the segment's first column, so a thread whose segment starts at gate/up column c of
 *   the matrix passes bias + c and bias_count - c; sep: gate_bias[j], up_bias[j] for output j of
 *   the segment. *amax receives the segment's max |act| over all Out outputs, those past the
 *   matrix included (their acc values count), with NaN ignored (quantized_row::amax(), the
 *   partial of the output amax). B = 16 (NVFP4) or 32 (MXFP4).
 */
#ifndef FP4FUSE_C_H
#define FP4FUSE_C_H

#include <stdint.h>

#if defined(__cplusplus) && defined(__CUDACC__)
#  define FP4FUSE_C_API extern "C" __device__
#elif defined(__cplusplus)
#  define FP4FUSE_C_API extern "C"
#else
#  define FP4FUSE_C_API
#endif

/* ---- E2M1, E4M3, UE8M0 conversions -------------------------------------------------------- */
/* 8 already-scaled values -> one packed word (fp4fuse::e2m1x8_encode). */
FP4FUSE_C_API uint32_t fp4fuse_e2m1x8(float a0, float a1, float a2, float a3, float a4, float a5, float a6, float a7);
/* One value -> E2M1 nibble in bits 3..0 (fp4fuse::e2m1_encode). */
FP4FUSE_C_API uint32_t fp4fuse_e2m1_encode(float x);
/* One value -> E4M3 byte, RN satfinite (fp4fuse::e4m3_encode). */
FP4FUSE_C_API uint32_t fp4fuse_e4m3_encode(float x);
/* Decoders (tests): nibble bits 3..0, byte bits 7..0; higher bits ignored. */
FP4FUSE_C_API float fp4fuse_e2m1_decode(uint32_t nibble);
FP4FUSE_C_API float fp4fuse_e4m3_decode(uint32_t byte);
FP4FUSE_C_API float fp4fuse_ue8m0_decode(uint32_t byte);

/* ---- scales ------------------------------------------------------------------------------- */
/* NVFP4 global encode scale S = 448 * 6 / |amax| (fp4fuse::nvfp4_global_encode_scale). */
FP4FUSE_C_API float fp4fuse_nvfp4_global_encode_scale(float amax);
/* block_codec<F>(S).scale_for(block_amax): the scale byte (.code) and the element multiplier. */
FP4FUSE_C_API uint32_t fp4fuse_nvfp4_te_exact_scale_code(float block_amax, float S);
FP4FUSE_C_API float fp4fuse_nvfp4_te_exact_multiplier(float block_amax, float S);
FP4FUSE_C_API uint32_t fp4fuse_nvfp4_vllm_scale_code(float block_amax, float S);
FP4FUSE_C_API float fp4fuse_nvfp4_vllm_multiplier(float block_amax, float S);
FP4FUSE_C_API uint32_t fp4fuse_mxfp4_mx_ocp_scale_code(float block_amax);
FP4FUSE_C_API float fp4fuse_mxfp4_mx_ocp_multiplier(float block_amax);
FP4FUSE_C_API uint32_t fp4fuse_mxfp4_mx_round_up_scale_code(float block_amax);
FP4FUSE_C_API float fp4fuse_mxfp4_mx_round_up_multiplier(float block_amax);
/* A block's amax as the format's codec computes it (NVFP4: NaN ignored; MXFP4: NaN and Inf
 * propagate) and the combination of two partial amaxes (block_codec<F>::combine_amax). */
FP4FUSE_C_API float fp4fuse_nvfp4_block_amax(const float* x /* [16] */);
FP4FUSE_C_API float fp4fuse_mxfp4_block_amax(const float* x /* [32] */);
FP4FUSE_C_API float fp4fuse_nvfp4_combine_amax(float a, float b);
FP4FUSE_C_API float fp4fuse_mxfp4_combine_amax(float a, float b);

/* ---- gated activations: act(gate) * up (fp4fuse::activation::*, default parameters) --------- */
FP4FUSE_C_API float fp4fuse_swiglu(float gate, float up);
FP4FUSE_C_API float fp4fuse_swiglu_fast(float gate, float up);
FP4FUSE_C_API float fp4fuse_swiglu_clamped(float gate, float up);
FP4FUSE_C_API float fp4fuse_swiglu_clamped_fast(float gate, float up);
FP4FUSE_C_API float fp4fuse_geglu_tanh(float gate, float up);

/* ---- block quantize: block_codec<F>(S).quantize(x) ------------------------------------------ */
/* NVFP4: x[16] -> packed[2], *scale (E4M3). MXFP4: x[32] -> packed[4], *scale (UE8M0). */
FP4FUSE_C_API void fp4fuse_nvfp4_te_exact_quantize(const float* x, float S, uint32_t* packed, uint8_t* scale);
FP4FUSE_C_API void fp4fuse_nvfp4_vllm_quantize(const float* x, float S, uint32_t* packed, uint8_t* scale);
FP4FUSE_C_API void fp4fuse_mxfp4_mx_ocp_quantize(const float* x, uint32_t* packed, uint8_t* scale);
FP4FUSE_C_API void fp4fuse_mxfp4_mx_round_up_quantize(const float* x, uint32_t* packed, uint8_t* scale);

/* ---- fused row form (see the file comment) -------------------------------------------------- */
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_te_exact_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_te_exact_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_te_exact_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_te_exact_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_te_exact_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_te_exact_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_te_exact_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_te_exact_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_te_exact_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_te_exact_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_te_exact_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_te_exact_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_te_exact_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_te_exact_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_te_exact_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_te_exact_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_vllm_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_vllm_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_vllm_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_nvfp4_vllm_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_vllm_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_vllm_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_vllm_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_nvfp4_vllm_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_vllm_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_vllm_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_vllm_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_nvfp4_vllm_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_vllm_i8_o16(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_vllm_sep_o16(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_vllm_i8_o32(const float* acc, const float* bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_nvfp4_vllm_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, float S, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_ocp_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_ocp_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_ocp_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_ocp_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_ocp_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_ocp_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_ocp_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_ocp_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_ocp_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_ocp_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_ocp_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_ocp_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_ocp_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_ocp_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_ocp_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_ocp_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_round_up_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_round_up_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_round_up_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_mxfp4_mx_round_up_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_round_up_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_round_up_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_round_up_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_fast_mxfp4_mx_round_up_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_round_up_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_round_up_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_round_up_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_mxfp4_mx_round_up_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_round_up_i8_o32(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_round_up_sep_o32(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_round_up_i8_o64(const float* acc, const float* bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);
FP4FUSE_C_API void fp4fuse_row_swiglu_clamped_fast_mxfp4_mx_round_up_sep_o64(const float* gate, const float* up, const float* gate_bias, const float* up_bias, int64_t bias_count, uint32_t* packed, uint8_t* scales, float* amax);

#endif /* FP4FUSE_C_H */
