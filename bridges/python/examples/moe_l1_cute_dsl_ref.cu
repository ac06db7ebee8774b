// The C++ side of moe_l1_cute_dsl.py: the library's own fp4fuse::swiglu_quantize (not the C ABI)
// behind one extern "C" host entry point, loaded with ctypes on torch tensors.
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a \
//        -I include bridges/python/examples/moe_l1_cute_dsl_ref.cu -o libfp4fuse_cute_ref.so
// Returns 0 on success, or writes a sentence into `err` and returns 1.
#include <cstdio>

#include "fp4fuse/fp4fuse.cuh"

namespace {

using namespace fp4fuse;

int fail(char* err, const char* what) {
  std::snprintf(err, 512, "%s", what);
  return 1;
}

// gate/up [M, 2I] interleaved by 8 (T = float: the GEMM's fp32 accumulators, the check; T =
// bfloat16: the unfused pipeline's GEMM output, the benchmark) -> NVFP4 te_exact, swizzled 128x4
// scales (padding written 0x00 by the library), intermediate::fp32 (the default: act * up is
// quantized from fp32, as in the fused epilogue's row form).
template <class T, class Act>
int run(const void* gu, long long M, long long I, const float* S, unsigned char* packed, unsigned char* scales,
        cudaStream_t stream, char* err) {
  using F = format::nvfp4<recipe::te_exact>;
  using L = scale_layout::swizzled_128x4;
  const matrix_view<const T> in{static_cast<const T*>(gu), M, 2 * I, 2 * I};
  const quantized_matrix<F, L> out{packed, I / 2, scales, L{M, I / 16}};
  const result r = swiglu_quantize<gate_up::interleaved<8>>(in, out, global_scale::per_tensor{S}, Act{}, stream);
  if (!r) return fail(err, r.message());
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::snprintf(err, 512, "swiglu_quantize: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

}  // namespace

extern "C" {

/// fp4fuse::swiglu_quantize<gate_up::interleaved<8>> of gu [M, 2I] (dtype 0: float, 1: bfloat16)
/// into NVFP4 te_exact with swizzled_128x4 scales; act 0: swiglu, 2: swiglu_clamped; S: one float
/// on the device (global_scale::per_tensor). Device pointers; `stream` a cudaStream_t (0: legacy).
int fp4fuse_cute_ref_swiglu_quantize(const void* gu, int dtype, long long M, long long I, int act, const float* S,
                                     unsigned char* packed, unsigned char* scales, void* stream, char* err) {
  const auto st = static_cast<cudaStream_t>(stream);
  if (dtype != 0 && dtype != 1) return fail(err, "dtype must be 0 (float) or 1 (bfloat16)");
  if (act != 0 && act != 2) return fail(err, "act must be 0 (swiglu) or 2 (swiglu_clamped)");
  if (dtype == 0)
    return act == 0 ? run<float, activation::swiglu>(gu, M, I, S, packed, scales, st, err)
                    : run<float, activation::swiglu_clamped>(gu, M, I, S, packed, scales, st, err);
  return act == 0 ? run<__nv_bfloat16, activation::swiglu>(gu, M, I, S, packed, scales, st, err)
                  : run<__nv_bfloat16, activation::swiglu_clamped>(gu, M, I, S, packed, scales, st, err);
}

}  // extern "C"
