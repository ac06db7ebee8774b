// Compiled only (the 'compile' suite, tests/compile/tcgen05_row_ptx.py; no Blackwell GPU here): a
// kernel that moves a 128-row gate/up slice through tensor memory with `tcgen05.st` / `tcgen05.ld`
// 32x32b (cuda::ptx) and hands the loaded registers to the row epilogue, as a Blackwell GEMM's
// epilogue warpgroup does after its tcgen05.mma. The script checks that the sm_100a PTX holds the
// 32x32b loads and the hardware E2M1 `cvt`, for NVFP4 (x32: one block per thread) and MXFP4 (x64).
#include <fp4fuse/fp4fuse.cuh>

#include <cuda/ptx>
#include <cuda/std/bit>
#include <cstdint>

namespace tcgen05_compile {

template <class Format, int N>
__global__ void __launch_bounds__(128) tcgen05_row_epilogue(const float* gate_up, std::int64_t ld, const float* d_S,
                                                            fp4fuse::quantized_matrix<Format, fp4fuse::scale_layout::swizzled_128x4> out,
                                                            float* amax) {
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
  using frag = fp4fuse::tcgen05_32x32b_fragment<N>;
  __shared__ std::uint32_t tmem_base;
  const int warp = static_cast<int>(threadIdx.x / 32);
  if (warp == 0) {
    cuda::ptx::tcgen05_alloc(cuda::ptx::cta_group_1, &tmem_base, 64u >= N ? 64u : static_cast<std::uint32_t>(N));
    cuda::ptx::tcgen05_relinquish_alloc_permit(cuda::ptx::cta_group_1);
  }
  cuda::ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  cuda::ptx::tcgen05_fence_after_thread_sync();
  // Warp w reaches TMEM lanes 32w..32w+31: the lane field of the address is bits 31..16.
  const std::uint32_t taddr = tmem_base + (static_cast<std::uint32_t>(32 * warp) << 16);
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * 128, col0 = static_cast<std::int64_t>(blockIdx.x) * N;
  const int t = frag::thread_row();
  std::uint32_t bits[N];
  for (int r = 0; r < N; ++r) bits[r] = cuda::std::bit_cast<std::uint32_t>(gate_up[(row0 + frag::row(t, r)) * ld + col0 + frag::col(t, r)]);
  cuda::ptx::tcgen05_st_32x32b(taddr, bits);  // what tcgen05.mma would have left there
  cuda::ptx::tcgen05_wait_st();
  cuda::ptx::tcgen05_ld_32x32b(bits, taddr);
  cuda::ptx::tcgen05_wait_ld();
  float acc[N];
  for (int r = 0; r < N; ++r) acc[r] = cuda::std::bit_cast<float>(bits[r]);
  const auto codec = fp4fuse::make_block_codec<Format>(d_S != nullptr ? *d_S : 1.0f);
  const fp4fuse::fused_epilogue op{codec, fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{},
                                   fp4fuse::no_bias{}, fp4fuse::output_amax::global{amax}};
  fp4fuse::row_epilogue(op, acc, {row0 + t, col0});
  cuda::ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0) cuda::ptx::tcgen05_dealloc(cuda::ptx::cta_group_1, tmem_base, 64u >= N ? 64u : static_cast<std::uint32_t>(N));
#else
  (void)gate_up, (void)ld, (void)d_S, (void)out, (void)amax;
  __trap();  // tensor memory needs sm_100a
#endif
}

}  // namespace tcgen05_compile

// Instantiated for the PTX: NVFP4 with 32 registers (one block per thread) and MXFP4 with 64.
template __global__ void tcgen05_compile::tcgen05_row_epilogue<fp4fuse::format::nvfp4<>, 32>(const float*, std::int64_t, const float*,
    fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>, float*);
template __global__ void tcgen05_compile::tcgen05_row_epilogue<fp4fuse::format::mxfp4<>, 64>(const float*, std::int64_t, const float*,
    fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4>, float*);
