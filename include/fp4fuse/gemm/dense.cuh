#pragma once
/// \file dense.cuh
/// The dense GEMM D[M, N] = X[M, K] * W[N, K]^T (BF16 in, FP32 accumulate) with an epilogue
/// applied to the accumulators in registers (epilogues.cuh), on one of two engines: the sm_90a
/// TMA + wgmma kernels (sm90.cuh) or the portable mma.sync kernel (mma_sync.cuh).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include "fp4fuse/config.cuh"
#include "fp4fuse/launch.cuh"
#include "fp4fuse/gemm/mma_sync.cuh"
#include "fp4fuse/gemm/sm90.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse::gemm {

/// Which GEMM kernel runs: `automatic` takes wgmma on an sm_90 device when this binary has an
/// sm_90a image, mma.sync otherwise.
enum class engine { automatic, wgmma, mma_sync };

/// A printable name of `e`.
/// \code
/// std::printf("%s\n", fp4fuse::gemm::engine_name(fp4fuse::gemm::engine::wgmma));
/// \endcode
inline const char* engine_name(engine e) {
  return e == engine::wgmma ? "wgmma (sm_90a, TMA, persistent)" : e == engine::mma_sync ? "mma.sync (portable)" : "automatic";
}

namespace detail {

/// Writes 1 from an sm_90a image, 0 from any other: whether this build's image for the current
/// device has the wgmma path (an sm_90 image without `a` compiles it to a trap).
template <int = 0>
__global__ void sm90a_image_probe(int* has_wgmma) {
  *has_wgmma = FP4FUSE_ARCH_IS_SM90A;
}

/// True when the wgmma kernel can run here: an sm_90 device and an sm_90a image in this build.
/// The first call per device launches a one-thread probe on a private stream and waits for it, in
/// relaxed capture mode: a capture under way on another stream is neither joined nor broken. A
/// definite answer is cached; a probe that fails for another reason (out of memory, or the capture
/// mode cannot be exchanged) answers false this time and runs again on the next call. Each CUDA
/// call's own result is read, never the runtime's last error: an error the caller left pending is
/// neither taken for the probe's nor cleared, unless a call of the probe's fails (its error then
/// replaced the caller's, and is cleared).
inline bool wgmma_runs_here() {
  bool failed = false;  // a call of ours failed: the runtime's last error is ours, cleared before returning
  const auto ok = [&failed](cudaError_t err) {
    failed = failed || err != cudaSuccess;
    return err == cudaSuccess;
  };
  int device = 0, major = 0, minor = 0;
  if (!ok(cudaGetDevice(&device)) || !ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) ||
      !ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device))) {
    (void)cudaGetLastError();
    return false;
  }
  if (major != 9 || minor != 0 || device < 0 || device >= 64) return false;
  enum : int { unknown, yes, no };
  static int cached[64] = {};
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (cached[device] != unknown) return cached[device] == yes;
  const fp4fuse::detail::relaxed_capture_mode relaxed;
  if (!ok(relaxed.status())) {
    (void)cudaGetLastError();
    return false;  // without relaxed mode the probe could break a capture under way: no answer this time
  }
  int answer = unknown;
  cudaStream_t stream = nullptr;
  if (ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking))) {
    int* flag = nullptr;
    if (ok(cudaMallocAsync(&flag, sizeof(int), stream))) {
      void* args[] = {&flag};
      const cudaError_t launched = cudaLaunchKernel(reinterpret_cast<const void*>(&sm90a_image_probe<0>), dim3(1), dim3(1), args, 0, stream);
      int has = 0;
      if (ok(launched)) {
        if (ok(cudaMemcpyAsync(&has, flag, sizeof has, cudaMemcpyDeviceToHost, stream)) && ok(cudaStreamSynchronize(stream))) {
          answer = has == 1 ? yes : no;
        }
      } else if (launched == cudaErrorNoKernelImageForDevice || launched == cudaErrorInvalidDeviceFunction) {
        answer = no;  // no image for this device at all
      }
      (void)ok(cudaFreeAsync(flag, stream));
    }
    (void)ok(cudaStreamSynchronize(stream));
    (void)ok(cudaStreamDestroy(stream));
  }
  if (failed) (void)cudaGetLastError();  // the probe's failure is an answer, not the caller's error
  if (answer != unknown) cached[device] = answer;
  return answer == yes;
}

/// The dense GEMM's arguments, each refusal with a sentence: X and W non-null and 16-byte
/// aligned (TMA), M >= 0, N and K >= 8 and multiples of 8 (16-byte rows), and the kernels' int
/// tile and unit counts in range.
inline void check_gemm(fp4fuse::argument_checker& c, const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K) {
  c.not_null(x, "x");
  c.not_null(w, "w");
  c.aligned(x, 16, "x", "TMA and 16-byte vector loads");
  c.aligned(w, 16, "w", "TMA and 16-byte vector loads");
  c.require(M >= 0 && N >= 8 && K >= 8, status::bad_shape, "M = %d, N = %d, K = %d: M >= 0, N >= 8 and K >= 8 are needed", M, N, K);
  c.require(K % 8 == 0 && N % 8 == 0, status::not_multiple_of_block, "N = %d and K = %d must be multiples of 8 (16-byte rows)", N, K);
  constexpr int limit = 1 << 30;
  c.require(M <= limit && N <= limit && K <= limit, status::bad_shape, "M = %d, N = %d, K = %d: each must be at most 2^30", M, N, K);
  c.require(static_cast<std::int64_t>(M / 128 + 1) * (N / 128 + 1) * 16 <= limit, status::bad_shape,
            "M = %d and N = %d give more tiles x splits than the kernels' 32-bit unit counts allow", M, N);
}

/// True for epilogues with `check(argument_checker&, index_t M, index_t N)`: refusals of their own
/// outputs for a GEMM output D of M x N (the library's three epilogues).
template <class Epilogue, class = void>
inline constexpr bool has_check = false;
template <class Epilogue>
inline constexpr bool has_check<Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().check(
                                              std::declval<fp4fuse::argument_checker&>(), index_t{}, index_t{}))>> = true;
/// True for epilogues with the shape-less `check(argument_checker&)` only: a caller's own
/// epilogue written before the extent was passed, still called.
template <class Epilogue, class = void>
inline constexpr bool has_shapeless_check = false;
template <class Epilogue>
inline constexpr bool has_shapeless_check<
    Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().check(std::declval<fp4fuse::argument_checker&>()))>> = true;

}  // namespace detail

/// The engine `e` resolves to on the current device.
/// \code
/// const fp4fuse::gemm::engine e = fp4fuse::gemm::resolve(fp4fuse::gemm::engine::automatic);
/// \endcode
inline engine resolve(engine e) {
  if (e != engine::automatic) return e;
  return detail::wgmma_runs_here() ? engine::wgmma : engine::mma_sync;
}

/// D[M, N] = X[M, K] * W[N, K]^T with epilogue `epi` (epilogues.cuh), FP32 accumulation: in the
/// order of K within a K split; where the plan splits K (automatic for few rows, by the SM count,
/// or `force_plan`) the splits' sums are added in split order, so the bits are deterministic for
/// a plan but may differ between plans. Refusals (a sentence in `message()`, nothing launched or
/// written): null or misaligned pointers, shapes, an output the epilogue cannot write (its
/// `check`: the output's extent M x N, or M x N / 2 after SwiGLU with N a multiple of 16, 32 for
/// NVFP4; the BF16 epilogues' data non-null and 4-byte aligned, cols even, ld even and >= cols;
/// the NVFP4 one's packed bytes, scales and S; a column bias's data, 8-byte aligned, where it
/// has columns, and its count even), a forced plan that names no kernel, `unsupported_architecture` (wgmma asked for where it cannot run). M = 0
/// after the argument and plan checks (before the architecture's): ok, nothing launched, no CUDA call. `force_plan` (wgmma only) replaces the automatic choice
/// of tile shape and K split; `workspace` (wgmma only) is the caller's split-K workspace
/// (sm90/workspace.cuh).
/// \code // not compiled: it instantiates every kernel of both engines (minutes); tests/gemm/dense.cu makes this call
/// const __nv_bfloat16 *d_x = nullptr, *d_w = nullptr;  // X [M, K] and W [N, K] in device memory
/// __nv_bfloat16* d_out = nullptr;                      // D [M, N]
/// const int rows = 64, n = 256, k = 512;
/// const fp4fuse::matrix_view<__nv_bfloat16> d{d_out, rows, n, n};
/// const fp4fuse::result r = fp4fuse::gemm::gemm(d_x, d_w, rows, n, k, fp4fuse::gemm::store_bf16{d}, fp4fuse::gemm::engine::automatic);
/// \endcode
template <class Epilogue>
result gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K, const Epilogue& epi, engine e,
            cudaStream_t stream = nullptr, const sm90::launch_plan* force_plan = nullptr, const sm90::workspace* workspace = nullptr) {
  fp4fuse::argument_checker c("fp4fuse::gemm::gemm");
  detail::check_gemm(c, x, w, M, N, K);
  if constexpr (detail::has_check<Epilogue>) {
    epi.check(c, M, N);
  } else if constexpr (detail::has_shapeless_check<Epilogue>) {
    epi.check(c);
  }
  if (!c) return c.outcome();
  if (const result v = sm90::validate_plan(force_plan); !v) return v;
  if (M == 0) return {};  // nothing to write: ok without any CUDA call (status.hpp)
  const bool wgmma_here = e != engine::mma_sync && detail::wgmma_runs_here();
  if (e == engine::wgmma && !wgmma_here) {
    return result::with(status::unsupported_architecture,
                        "fp4fuse::gemm::gemm: engine::wgmma needs an sm_90 GPU and an sm_90a image in this build");
  }
  return wgmma_here ? sm90::launch(x, w, M, N, K, epi, stream, force_plan, workspace) : mma::launch(x, w, M, N, K, epi, stream);
}

}  // namespace fp4fuse::gemm
