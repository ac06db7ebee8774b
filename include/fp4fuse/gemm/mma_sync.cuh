#pragma once
/// \file mma_sync.cuh
/// The portable GEMM engine (sm_80 and later, including sm_100a/sm_120a):
// D[M, N] = X[M, K] * W[N, K]^T with `mma.sync` m16n8k16 (BF16 in, FP32 accumulate), then the
// epilogue on each warp's fragments. Deliberately simple: 128 x 128 tiles, a 32-wide K step through
// padded shared memory, 8 warps of 16 x 128. Correctness reference and fallback, not a fast path.
#include <cuda/cmath>
#include "fp4fuse/config.cuh"
#include "fp4fuse/launch.cuh"
#include "fp4fuse/gemm/tile_grid.cuh"

namespace fp4fuse::gemm::mma {

constexpr int block_m = 128;  ///< tile rows
constexpr int block_n = 128;  ///< tile columns
constexpr int block_k = 32;   ///< K per shared-memory step
constexpr int threads = 256;  ///< 8 warps of 16 x 128
constexpr int smem_ld = block_k + 8;  ///< bf16 per shared row: 80 bytes, conflict-free fragment loads

namespace detail {

FP4FUSE_DEVICE void mma_m16n8k16_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                  std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Copies rows [row0, row0 + 128) x columns [k0, k0 + 32) of a row-major [rows, K] matrix into
/// shared memory, zeros beyond the matrix (K is a multiple of 8: a 16-byte vector is all in or out).
FP4FUSE_DEVICE void load_tile(__nv_bfloat16 (*dst)[smem_ld], const __nv_bfloat16* src, int rows, int K, int row0,
                                          int k0) {
  for (int v = static_cast<int>(threadIdx.x); v < 128 * block_k / 8; v += threads) {
    const int r = v / (block_k / 8), c = (v % (block_k / 8)) * 8;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (row0 + r < rows && k0 + c < K) {
      value = *reinterpret_cast<const uint4*>(src + static_cast<index_t>(row0 + r) * K + k0 + c);
    }
    *reinterpret_cast<uint4*>(&dst[r][c]) = value;
  }
}

FP4FUSE_DEVICE std::uint32_t pair(const __nv_bfloat16* p) { return *reinterpret_cast<const std::uint32_t*>(p); }

}  // namespace detail

/// One 128 x 128 tile of D per CTA (grid: N tiles x M tiles), the epilogue on each warp's 16 x 128
/// fragments. sm_80 and later (config.cuh refuses older device passes).
/// \code
/// const __nv_bfloat16 *d_x = nullptr, *d_w = nullptr;  // X [256, 1024], W [512, 1024] in device memory
/// const fp4fuse::gemm::store_bf16 epi{fp4fuse::matrix_view<__nv_bfloat16>{h, 256, 512, 512}};  // D [256, 512]
/// const dim3 grid(512 / fp4fuse::gemm::mma::block_n, 256 / fp4fuse::gemm::mma::block_m);    // N tiles x M tiles
/// fp4fuse::gemm::mma::gemm_kernel<<<grid, fp4fuse::gemm::mma::threads, 0, stream>>>(d_x, d_w, 256, 512, 1024, epi);  // as mma::launch does
/// \endcode
template <class Epilogue>
__global__ void __launch_bounds__(threads) gemm_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                                      int M, int N, int K, Epilogue epi) {
#if FP4FUSE_DEVICE_PASS
  __shared__ __align__(16) __nv_bfloat16 xs[block_m][smem_ld];
  __shared__ __align__(16) __nv_bfloat16 ws[block_n][smem_ld];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;
  const int m0 = static_cast<int>(blockIdx.y) * block_m, n0 = static_cast<int>(blockIdx.x) * block_n;
  float acc[block_n / 8][4] = {};
  for (int k0 = 0; k0 < K; k0 += block_k) {
    detail::load_tile(xs, x, M, K, m0, k0);
    detail::load_tile(ws, w, N, K, n0, k0);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < block_k; ks += 16) {
      const int r = warp * 16 + g;
      const std::uint32_t a[4] = {detail::pair(&xs[r][ks + 2 * t]), detail::pair(&xs[r + 8][ks + 2 * t]),
                                  detail::pair(&xs[r][ks + 2 * t + 8]), detail::pair(&xs[r + 8][ks + 2 * t + 8])};
#pragma unroll
      for (int n = 0; n < block_n / 8; ++n) {
        detail::mma_m16n8k16_bf16(acc[n], a, detail::pair(&ws[8 * n + g][ks + 2 * t]),
                                  detail::pair(&ws[8 * n + g][ks + 2 * t + 8]));
      }
    }
    __syncthreads();
  }
  epi.warp(acc, static_cast<index_t>(m0) + 16 * warp, static_cast<index_t>(n0));
#else
  (void)x, (void)w, (void)M, (void)N, (void)K, (void)epi;
  __trap();  // the host pass's copy of the body (never run)
#endif
}

/// Launches the GEMM with epilogue `epi` (arguments validated by the caller, fp4fuse::gemm::gemm in dense.cuh).
/// \code
/// const __nv_bfloat16 *d_x = nullptr, *d_w = nullptr;  // X [256, 1024], W [512, 1024] in device memory
/// const fp4fuse::gemm::store_bf16 epi{fp4fuse::matrix_view<__nv_bfloat16>{h, 256, 512, 512}};  // D [256, 512]
/// const fp4fuse::result r = fp4fuse::gemm::mma::launch(d_x, d_w, 256, 512, 1024, epi, stream);  // after gemm()'s checks
/// \endcode
template <class Epilogue>
result launch(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K, const Epilogue& epi,
                       cudaStream_t stream) {
  auto* kernel = &gemm_kernel<Epilogue>;
  if (const fp4fuse::result image = fp4fuse::check_kernel_image(kernel, "fp4fuse::gemm::mma::launch"); !image) return image;
  const dim3 grid(static_cast<unsigned>(cuda::ceil_div(N, block_n)), static_cast<unsigned>(cuda::ceil_div(M, block_m)));
  if (grid.y > 65535u) {
    return result::with(status::bad_shape, "fp4fuse::gemm::mma::launch: M = %d needs more than 65535 row blocks of 128", M);
  }
  kernel<<<grid, threads, 0, stream>>>(x, w, M, N, K, epi);
  return fp4fuse::launch_result("fp4fuse::gemm::mma::launch");
}

}  // namespace fp4fuse::gemm::mma
