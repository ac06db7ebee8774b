#pragma once
// The MoE layer's first GEMM and its three output flows, as the L1 example runs them:
//
//   D = X[T, H] * W[2I, H]^T   (W stored like nn.Linear's weight: row n holds output column n,
//                               gate/up interleaved in granules of 8: rows 16g..16g+7 gate,
//                               16g+8..16g+15 the matching up rows)
//   flow 1: D as interleaved BF16 [T, 2I], then the standalone swiglu_quantize kernel
//   flow 2: compact BF16 SwiGLU output [T, I] from the epilogue, then the standalone quantize kernel
//   flow 3: SwiGLU -> NVFP4 in the GEMM epilogue: packed E2M1 [T, I/2] + 128x4-swizzled E4M3 scales
//
// All three quantize with the static global encode scale S in device memory (as serving engines
// do with a calibrated activation scale) and TransformerEngine's recipe. Two GEMM engines: the
// sm_90a TMA + wgmma kernel (gemm_sm90.cuh) and the portable mma.sync kernel (gemm_mma.cuh).
#include <algorithm>
#include <mutex>
#include <type_traits>

#include "gemm_mma.cuh"
#include "gemm_sm90.cuh"

namespace l1_gemm {

using format = fp4fuse::format::nvfp4<>;
using layout = fp4fuse::scale_layout::swizzled_128x4;
using gate_up = fp4fuse::gate_up::interleaved<8>;

/// Which GEMM kernel runs: `automatic` takes wgmma on an sm_90 device when this binary has an
/// sm_90a image, mma.sync otherwise.
enum class engine { automatic, wgmma, mma_sync };

inline const char* engine_name(engine e) {
  return e == engine::wgmma ? "wgmma (sm_90a, TMA, persistent)" : e == engine::mma_sync ? "mma.sync (portable)" : "automatic";
}

/// The three flows, as compile-time tags.
namespace flow {
struct interleaved_bf16 {};  ///< flow 1
struct compact_bf16 {};      ///< flow 2
/// Flow 3; `intermediate::bf16` rounds act * up to BF16 before quantizing (bit-identical to flow 2).
template <class Intermediate = fp4fuse::intermediate::fp32>
struct fused_nvfp4 {};
}  // namespace flow

template <class Flow>
struct fused_traits;
template <class Intermediate>
struct fused_traits<flow::fused_nvfp4<Intermediate>> {
  using intermediate = Intermediate;
};

/// One problem's device tensors. Flow 1 needs `gate_up`, flow 2 needs `h`; all need the NVFP4
/// outputs and S.
struct problem {
  const __nv_bfloat16* x = nullptr;  ///< [T, H], 16-byte aligned
  const __nv_bfloat16* w = nullptr;  ///< [2I, H], 16-byte aligned
  int T = 0, H = 0, I = 0;           ///< T >= 1, H a multiple of 8, I a multiple of 16
  __nv_bfloat16* gate_up = nullptr;  ///< flow 1's [T, 2I] BF16 intermediate
  __nv_bfloat16* h = nullptr;        ///< flow 2's [T, I] BF16 intermediate
  std::uint8_t* packed = nullptr;    ///< [T, I / 2] E2M1, 8-byte aligned
  std::uint8_t* scales = nullptr;    ///< layout{T, I / 16}.size_bytes() bytes, padding written as 0x00
  const float* global_encode_scale = nullptr;  ///< S, device memory
};

namespace detail {

inline fp4fuse::result validate_gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K) {
  using fp4fuse::status;
  if (x == nullptr || w == nullptr) return {status::null_pointer};
  if (!fp4fuse::detail::is_aligned(x, 16) || !fp4fuse::detail::is_aligned(w, 16)) return {status::misaligned_pointer};
  if (M < 1 || N < 8 || K < 8) return {status::bad_shape};
  if (K % 8 != 0 || N % 8 != 0) return {status::not_multiple_of_block};  // 16-byte rows for TMA and vector loads
  // The kernels' tile and unit counts are int: keep M, N, K and (tiles x splits) well inside it.
  constexpr int limit = 1 << 30;
  if (M > limit || N > limit || K > limit) return {status::bad_shape};
  if (static_cast<std::int64_t>(M / 128 + 1) * (N / 128 + 1) * 16 > limit) return {status::bad_shape};
  return {};
}

/// Writes 1 from an sm_90a image, 0 from any other: whether this build's image for the current
/// device has the wgmma path (an sm_90 image without `a` compiles it to a trap).
template <int = 0>
__global__ void sm90a_image_probe(int* has_wgmma) {
  *has_wgmma = FP4FUSE_ARCH_IS_SM90A;
}

/// True when the wgmma kernel can run here: an sm_90 device and an sm_90a image in this build.
/// The first call per device launches a one-thread probe on a private stream and waits for it, in
/// relaxed capture mode: a capture under way on another stream is neither joined nor broken. A
/// definite answer is cached; a probe that fails for another reason (out of memory, say) answers
/// false this time and runs again on the next call.
inline bool wgmma_runs_here() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (major != 9 || minor != 0 || device < 0 || device >= 64) return false;
  enum : int { unknown, yes, no };
  static int cached[64] = {};
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (cached[device] != unknown) return cached[device] == yes;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  int answer = unknown;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess) {
    int* flag = nullptr;
    if (cudaMallocAsync(&flag, sizeof(int), stream) == cudaSuccess) {
      sm90a_image_probe<<<1, 1, 0, stream>>>(flag);
      const cudaError_t launched = cudaGetLastError();
      int has = 0;
      if (launched == cudaSuccess) {
        if (cudaMemcpyAsync(&has, flag, sizeof has, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
            cudaStreamSynchronize(stream) == cudaSuccess) {
          answer = has == 1 ? yes : no;
        }
      } else if (launched == cudaErrorNoKernelImageForDevice || launched == cudaErrorInvalidDeviceFunction) {
        answer = no;  // no image for this device at all
      }
      (void)cudaFreeAsync(flag, stream);
    }
    (void)cudaStreamSynchronize(stream);
    (void)cudaStreamDestroy(stream);
  }
  (void)cudaGetLastError();  // the probe's failure is an answer, not the caller's error
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (answer != unknown) cached[device] = answer;
  return answer == yes;
}

}  // namespace detail

/// The engine `e` resolves to on the current device.
inline engine resolve(engine e) {
  if (e != engine::automatic) return e;
  return detail::wgmma_runs_here() ? engine::wgmma : engine::mma_sync;
}

/// D[M, N] = X[M, K] * W[N, K]^T with epilogue `epi`. Errors: null/misaligned pointers, shapes,
/// `unsupported_architecture` (wgmma asked for where it cannot run). Nothing is launched on error.
/// `force_plan` (wgmma only) replaces the automatic choice of tile width and K split;
/// `workspace` (wgmma only) is the caller's split-K workspace (sm90/workspace.cuh).
template <class Epilogue>
fp4fuse::result gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K, const Epilogue& epi, engine e,
                     cudaStream_t stream = nullptr, const sm90::launch_plan* force_plan = nullptr,
                     const sm90::workspace* workspace = nullptr) {
  if (const fp4fuse::result v = detail::validate_gemm(x, w, M, N, K); !v) return v;
  if (const fp4fuse::result v = sm90::validate_plan(force_plan); !v) return v;
  const bool wgmma_here = e != engine::mma_sync && detail::wgmma_runs_here();
  if (e == engine::wgmma && !wgmma_here) return {fp4fuse::status::unsupported_architecture};
  return wgmma_here ? sm90::launch(x, w, M, N, K, epi, stream, force_plan, workspace) : mma::launch(x, w, M, N, K, epi, stream);
}

namespace detail {

inline fp4fuse::result validate_problem(const problem& p) {
  using fp4fuse::status;
  if (p.packed == nullptr || p.scales == nullptr || p.global_encode_scale == nullptr) return {status::null_pointer};
  if (p.T < 1 || p.H < 8 || p.I < 16) return {status::bad_shape};
  if (p.I % 16 != 0 || p.H % 8 != 0) return {status::not_multiple_of_block};
  if (p.I > (1 << 29) / 2 || static_cast<std::int64_t>(p.T) * p.I > (std::int64_t(1) << 40)) return {status::bad_shape};
  if (!fp4fuse::detail::is_aligned(p.packed, 8) || !fp4fuse::detail::is_aligned(p.global_encode_scale, 4)) {
    return {status::misaligned_pointer};
  }
  return {};
}

}  // namespace detail

/// Runs one flow end to end on `stream` (flows 1 and 2: the GEMM, then their standalone kernel).
template <class Flow, class Activation>
fp4fuse::result run(const problem& p, Flow, const Activation& act, engine e, cudaStream_t stream = nullptr,
                    const sm90::launch_plan* force_plan = nullptr) {
  using fp4fuse::status;
  if (const fp4fuse::result v = detail::validate_problem(p); !v) return v;
  const std::int64_t T = p.T, I = p.I;
  const fp4fuse::quantized_matrix<format, layout> out{p.packed, I / 2, p.scales, layout{T, I / 16}};
  if constexpr (std::is_same_v<Flow, flow::interleaved_bf16>) {
    if (p.gate_up == nullptr) return {status::null_pointer};
    if (!fp4fuse::detail::is_aligned(p.gate_up, 16)) return {status::misaligned_pointer};
    // validate_problem covered what the second kernel checks (but for its grid limit, which no
    // problem that fits in memory reaches): an error launches nothing.
    const fp4fuse::matrix_view<__nv_bfloat16> gu{p.gate_up, T, 2 * I, 2 * I};
    if (const fp4fuse::result r = gemm(p.x, p.w, p.T, 2 * p.I, p.H, store_bf16{gu}, e, stream, force_plan); !r) return r;
    return fp4fuse::swiglu_quantize<gate_up>(gu, out, fp4fuse::global_scale::per_tensor{p.global_encode_scale}, act, stream);
  } else if constexpr (std::is_same_v<Flow, flow::compact_bf16>) {
    if (p.h == nullptr) return {status::null_pointer};
    if (!fp4fuse::detail::is_aligned(p.h, 16)) return {status::misaligned_pointer};
    const fp4fuse::matrix_view<__nv_bfloat16> h{p.h, T, I, I};
    if (const fp4fuse::result r = gemm(p.x, p.w, p.T, 2 * p.I, p.H, swiglu_bf16<Activation>{h, act}, e, stream, force_plan); !r) {
      return r;
    }
    return fp4fuse::quantize(h, out, fp4fuse::global_scale::per_tensor{p.global_encode_scale}, stream);
  } else {
    using intermediate = typename fused_traits<Flow>::intermediate;
    return gemm(p.x, p.w, p.T, 2 * p.I, p.H, swiglu_nvfp4<Activation, intermediate>{out, p.global_encode_scale, act}, e, stream, force_plan);
  }
}

}  // namespace l1_gemm
