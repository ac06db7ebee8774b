// The C++ side of the Triton module's GPU tests: the library's own templates (not the C ABI)
// behind extern "C" host entry points, loaded with ctypes on torch tensors.
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a \
//        -I include tests/bridges/triton/reference.cu -o libfp4fuse_triton_ref.so
// Every entry point returns 0 on success, or writes a sentence into `err` and returns 1.
#include <cstdio>
#include <cstring>

#include "fp4fuse/fp4fuse.cuh"

namespace {

using namespace fp4fuse;

int fail(char* err, const char* what) {
  std::snprintf(err, 512, "%s", what);
  return 1;
}

int cuda_status(char* err, const char* where) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::snprintf(err, 512, "%s: %s", where, cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

// ---- elementwise -------------------------------------------------------------------------------
template <int Which>
__device__ cuda::std::uint32_t elementwise(const float* a, const float* b, const cuda::std::uint32_t* u, int i) {
  const float x = a[i], y = b[i];
  const auto bits = [](float f) { return cuda::std::bit_cast<cuda::std::uint32_t>(f); };
  const auto byte = static_cast<cuda::std::uint8_t>(u[i]);
  if constexpr (Which == 0) return e2m1_encode(x);
  if constexpr (Which == 1) return e4m3_encode(x);
  if constexpr (Which == 2) return bits(e2m1_decode(static_cast<cuda::std::uint8_t>(u[i] & 0xFu)));
  if constexpr (Which == 3) return bits(e4m3_decode(byte));
  if constexpr (Which == 4) return bits(ue8m0_decode(byte));
  if constexpr (Which == 5) return bits(nvfp4_global_encode_scale(x));
  if constexpr (Which == 6) return block_codec<format::nvfp4<recipe::te_exact>>(y).scale_for(x).code;
  if constexpr (Which == 7) return bits(block_codec<format::nvfp4<recipe::te_exact>>(y).scale_for(x).multiplier);
  if constexpr (Which == 8) return block_codec<format::nvfp4<recipe::vllm>>(y).scale_for(x).code;
  if constexpr (Which == 9) return bits(block_codec<format::nvfp4<recipe::vllm>>(y).scale_for(x).multiplier);
  if constexpr (Which == 10) return block_codec<format::mxfp4<recipe::mx_ocp>>().scale_for(x).code;
  if constexpr (Which == 11) return bits(block_codec<format::mxfp4<recipe::mx_ocp>>().scale_for(x).multiplier);
  if constexpr (Which == 12) return block_codec<format::mxfp4<recipe::mx_round_up>>().scale_for(x).code;
  if constexpr (Which == 13) return bits(block_codec<format::mxfp4<recipe::mx_round_up>>().scale_for(x).multiplier);
  if constexpr (Which == 14) return bits(activation::swiglu{}.apply(x, y));
  if constexpr (Which == 15) return bits(activation::swiglu_fast{}.apply(x, y));
  if constexpr (Which == 16) return bits(activation::swiglu_clamped{}.apply(x, y));
  if constexpr (Which == 17) return bits(activation::swiglu_clamped_fast{}.apply(x, y));
  if constexpr (Which == 18) return bits(activation::geglu_tanh{}.apply(x, y));
  if constexpr (Which == 19) {
    float v[8];
    for (int j = 0; j < 8; ++j) v[j] = a[8 * i + j];
    return e2m1x8_encode(v);
  }
  return 0;
}

template <int Which>
__global__ void elementwise_kernel(const float* a, const float* b, const cuda::std::uint32_t* u, cuda::std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = elementwise<Which>(a, b, u, i);
}

template <int... W>
int launch_elementwise(int which, const float* a, const float* b, const cuda::std::uint32_t* u, cuda::std::uint32_t* out, int n,
                       std::integer_sequence<int, W...>) {
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  bool found = false;
  ((which == W ? (elementwise_kernel<W><<<blocks, 256>>>(a, b, u, out, n), found = true) : false), ...);
  return found ? 0 : 1;
}

// ---- swiglu_quantize ---------------------------------------------------------------------------
// The one call of the library launcher: swiglu_quantize<GateUp>(gu, out, scale, act, stream), the
// scale a global_scale descriptor (per_tensor, per_row or none for MXFP4) chosen by `run`.
template <class GateUp, class T, class Act, class Fmt, class Layout, class Scale>
result call_swiglu_quantize(const matrix_view<const T>& gu, const Act& act, const quantized_matrix<Fmt, Layout>& out, Scale s,
                            cudaStream_t stream) {
  return swiglu_quantize<GateUp>(gu, out, s, act, stream);
}

template <class GateUp, class T, class Act, class Fmt, class Layout>
int run(const void* gu, long long M, long long I, const float* S, float* row_S, cuda::std::uint8_t* packed, cuda::std::uint8_t* scales,
        cudaStream_t stream, char* err) {
  constexpr int B = Fmt::block_size;
  const matrix_view<const T> in{static_cast<const T*>(gu), M, 2 * I, 2 * I};
  const quantized_matrix<Fmt, Layout> out{packed, I / 2, scales, Layout{M, I / B}};
  result r;
  if constexpr (Fmt::has_global_scale) {
    if (row_S != nullptr) {
      r = call_swiglu_quantize<GateUp>(in, Act{}, out, global_scale::per_row{row_S}, stream);
    } else {
      r = call_swiglu_quantize<GateUp>(in, Act{}, out, global_scale::per_tensor{S}, stream);
    }
  } else {
    if (row_S != nullptr) return fail(err, "row_S: MXFP4 has no global scale");
    r = call_swiglu_quantize<GateUp>(in, Act{}, out, global_scale::none{}, stream);
  }
  if (!r) return fail(err, r.message());
  return cuda_status(err, "swiglu_quantize");
}

template <class GateUp, class T, class Act, class Layout>
int by_format(int fmt, const void* gu, long long M, long long I, const float* S, float* row_S, cuda::std::uint8_t* packed,
              cuda::std::uint8_t* scales, cudaStream_t stream, char* err) {
  switch (fmt) {
    case 0: return run<GateUp, T, Act, format::nvfp4<recipe::te_exact>, Layout>(gu, M, I, S, row_S, packed, scales, stream, err);
    case 1: return run<GateUp, T, Act, format::nvfp4<recipe::vllm>, Layout>(gu, M, I, S, row_S, packed, scales, stream, err);
    case 2: return run<GateUp, T, Act, format::mxfp4<recipe::mx_ocp>, Layout>(gu, M, I, S, row_S, packed, scales, stream, err);
    case 3: return run<GateUp, T, Act, format::mxfp4<recipe::mx_round_up>, Layout>(gu, M, I, S, row_S, packed, scales, stream, err);
  }
  return fail(err, "fmt must be 0..3 (nvfp4 te_exact, nvfp4 vllm, mxfp4 mx_ocp, mxfp4 mx_round_up)");
}

}  // namespace

extern "C" {

/// out[i] = the library's function `which` (tests/bridges/triton/kernels.py ELEMENTWISE order) of
/// a[i], b[i] or u[i], as uint32 bits; which 19 (e2m1x8) reads a[8i .. 8i+8). Device pointers.
int fp4fuse_ref_elementwise(int which, const float* a, const float* b, const unsigned* u, unsigned* out, int n, char* err) {
  if (launch_elementwise(which, a, b, u, out, n, std::make_integer_sequence<int, 20>{}) != 0) return fail(err, "which must be 0..19");
  return cuda_status(err, "elementwise");
}

/// fp4fuse::swiglu_quantize of gate_up [M, 2I] (dtype 0: float, 1: bfloat16, split halves only), intermediate::fp32.
/// gate_up 0: interleaved<8>, 1: split_gate_first. act 0..4: swiglu, swiglu_fast, swiglu_clamped,
/// swiglu_clamped_fast, geglu_tanh. fmt 0..3 (see by_format). layout 0: linear, 1: swizzled_128x4.
/// row_S non-null: global_scale::per_row (written); else S (one float; MXFP4: ignored).
int fp4fuse_ref_swiglu_quantize(const void* gu, int dtype, long long M, long long I, int gate_up, int act, int fmt, int layout,
                                const float* S, float* row_S, unsigned char* packed, unsigned char* scales, void* stream, char* err) {
  const auto st = static_cast<cudaStream_t>(stream);
  using L0 = scale_layout::linear;
  using L1 = scale_layout::swizzled_128x4;
  using I8 = gate_up::interleaved<8>;
  using SP = gate_up::split_gate_first;
  if (dtype == 1) {
    // The unfused pipeline's second kernel: BF16 gate/up as a GEMM wrote them (split halves).
    if (gate_up != 1 || layout != 1 || (act != 0 && act != 2) || fmt != 0)
      return fail(err, "bfloat16 input: only split_gate_first, swizzled_128x4, nvfp4 te_exact, swiglu or swiglu_clamped are built");
    using F = format::nvfp4<recipe::te_exact>;
    return act == 0 ? run<SP, __nv_bfloat16, activation::swiglu, F, L1>(gu, M, I, S, row_S, packed, scales, st, err)
                    : run<SP, __nv_bfloat16, activation::swiglu_clamped, F, L1>(gu, M, I, S, row_S, packed, scales, st, err);
  }
  if (gate_up == 0 && layout == 1) {
    switch (act) {
      case 0: return by_format<I8, float, activation::swiglu, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
      case 1: return by_format<I8, float, activation::swiglu_fast, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
      case 2: return by_format<I8, float, activation::swiglu_clamped, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
      case 3: return by_format<I8, float, activation::swiglu_clamped_fast, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
      case 4: return by_format<I8, float, activation::geglu_tanh, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
    }
    return fail(err, "act must be 0..4");
  }
  if (gate_up == 1 && layout == 1 && act == 2) {
    return by_format<SP, float, activation::swiglu_clamped, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
  }
  if (act != 0) return fail(err, "linear layout or split gate/up: only swiglu (act 0) is built (and swiglu_clamped for split, swizzled)");
  if (gate_up == 0) return by_format<I8, float, activation::swiglu, L0>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
  return layout == 0 ? by_format<SP, float, activation::swiglu, L0>(fmt, gu, M, I, S, row_S, packed, scales, st, err)
                     : by_format<SP, float, activation::swiglu, L1>(fmt, gu, M, I, S, row_S, packed, scales, st, err);
}

}  // extern "C"
