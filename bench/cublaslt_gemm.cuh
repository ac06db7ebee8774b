#pragma once
// cuBLASLt's BF16 GEMM as the benchmarks' reference: D[T, N] = X[T, K] * W[N, K]^T, the fastest
// of the heuristic's algorithms timed in the same run.
#include <cublasLt.h>

#include <memory>

#include "bench_support.cuh"

#define CHECK_CUBLAS(x)                                                               \
  do {                                                                                \
    cublasStatus_t s_ = (x);                                                          \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
      std::fprintf(stderr, "%s:%d: %s -> cuBLAS status %d\n", __FILE__, __LINE__, #x, \
                   static_cast<int>(s_));                                             \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace bench {

/// A strided batch of `count` GEMMs of the same shape (batch i at X + i * x_stride, W + i * w_stride,
/// D + i * d_stride, in elements): a grouped GEMM whose groups all have T rows.
struct cublas_batch {
  int count = 1;
  long long x_stride = 0, w_stride = 0, d_stride = 0;
};

/// cuBLASLt D[T, N] = X[T, K] * W[N, K]^T in row-major terms, i.e. column-major
/// D^T[N, T] = W^T(op T)[N, K] * X^T[K, T]; BF16 in and out, FP32 compute; optionally a strided batch.
struct cublas_gemm {
  cublasLtHandle_t handle{};
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t a{}, b{}, d{};
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  std::size_t workspace_bytes = std::size_t(64) << 20;
  int algorithms_tried = 0;

  cublas_gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int T, int N, int K, const cublas_batch& batch = {}) {
    CHECK_CUBLAS(cublasLtCreate(&handle));
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, K, N, K));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, K, T, K));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, N, T, N));
    if (batch.count > 1) {
      const auto set = [&](cublasLtMatrixLayout_t l, long long stride) {
        CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch.count, sizeof batch.count));
        CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
      };
      set(a, batch.w_stride);
      set(b, batch.x_stride);
      set(d, batch.d_stride);
    }
    CHECK_CUDA(cudaMalloc(&workspace, workspace_bytes));
    cublasLtMatmulPreference_t pref{};
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                      sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t results[16]{};
    int found = 0;
    CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, d, d, pref, 16, results, &found));
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    if (found == 0) {
      std::fprintf(stderr, "cuBLASLt found no algorithm\n");
      std::exit(1);
    }
    // The fastest of the heuristic's candidates, timed here.
    double best = 1e30;
    for (int i = 0; i < found; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      algo = results[i].algo;
      const double t = time_us([&] { run(x, w, out); });
      ++algorithms_tried;
      if (t < best) {
        best = t;
        chosen = i;
      }
    }
    if (algorithms_tried == 0) {
      std::fprintf(stderr, "cuBLASLt: no usable algorithm among %d candidates\n", found);
      std::exit(1);
    }
    algo = results[chosen].algo;
  }
  void run(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out) const {
    const float alpha = 1.0f, beta = 0.0f;
    CHECK_CUBLAS(cublasLtMatmul(handle, desc, &alpha, w, a, x, b, &beta, out, d, out, d, &algo, workspace, workspace_bytes, nullptr));
  }
  ~cublas_gemm() {
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(d);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(handle);
    cudaFree(workspace);
  }
  int chosen = 0;
};

/// The roofline's compute ceiling: cuBLASLt's BF16 GEMM on n x n x n, random inputs, its buffers
/// and plan kept for as long as the object lives (bench_moe times it again in every configuration).
struct reference_gemm {
  int n;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *d = nullptr;
  std::unique_ptr<cublas_gemm> gemm;

  explicit reference_gemm(int n_ = 8192) : n(n_) {
    const std::size_t elems = std::size_t(n) * n;
    CHECK_CUDA(cudaMalloc(&a, elems * 2));
    CHECK_CUDA(cudaMalloc(&b, elems * 2));
    CHECK_CUDA(cudaMalloc(&d, elems * 2));
    fill_bf16<<<4096, 256>>>(a, elems, 1u, 1.0f);
    fill_bf16<<<4096, 256>>>(b, elems, 2u, 1.0f);
    CHECK_CUDA(cudaGetLastError());
    gemm = std::make_unique<cublas_gemm>(a, b, d, n, n, n);  // the heuristic's fastest
  }
  reference_gemm(const reference_gemm&) = delete;
  reference_gemm& operator=(const reference_gemm&) = delete;
  ~reference_gemm() {
    gemm.reset();
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
  }
  void run() const { gemm->run(a, b, d); }
  double flops() const { return 2.0 * n * n * double(n); }
  /// TFLOP/s at `us` microseconds per run.
  double tflops(double us) const { return flops() / (us * 1e-6) / 1e12; }
};

}  // namespace bench
