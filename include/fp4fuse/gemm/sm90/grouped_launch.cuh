#pragma once
// The host side of the grouped (MoE) sm_90a GEMM: the launch of a grouped plan (plan.cuh) with
// the grouped schedule (grouped_schedule.cuh) on the dense GEMM's kernels.
#include <cuda/cmath>
#include <algorithm>

#include "grouped_schedule.cuh"
#include "launch.cuh"

namespace l1_gemm::sm90 {

/// Launches the grouped GEMM: for every group g, D_g = X[offsets[g] : offsets[g+1]] * W_g^T with
/// W [groups * N, K], the epilogue bound per group through its `for_group` (epilogue.cuh). The
/// caller (moe_l1.cuh) has validated the arguments and checked that the device runs the sm_90a
/// kernels. The grid is the resident CTAs (the units depend on the offsets, which the host does
/// not read), so the launch is the same for any routing of `rows` rows.
template <class Epilogue>
fp4fuse::result launch_grouped(const __nv_bfloat16* x, const __nv_bfloat16* w, int rows, int N, int K, int groups,
                               const std::int32_t* offsets, const Epilogue& epi, cudaStream_t stream,
                               const grouped_plan* force = nullptr) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return fp4fuse::detail::cuda_failure(err, "l1_gemm::sm90::launch_grouped");
  const grouped_plan p = force != nullptr ? *force : plan_grouped(rows, groups);
  const params prm{rows, N, K, 1, nullptr, nullptr};
  const grouped_schedule::arguments args{offsets, groups};
  // An upper bound of the units: every group's row blocks, rounded up per group.
  const int tiles_n = cuda::ceil_div(N, p.block_n);
  const long long bound = (static_cast<long long>(rows) / p.block_m / p.cluster + groups + 1) * tiles_n;
  const int units = static_cast<int>(std::min<long long>(bound, 1 << 30));
  const std::uint64_t w_rows = static_cast<std::uint64_t>(groups) * static_cast<std::uint64_t>(N);
  const auto clustered = [&](auto tile) {
    using shape = decltype(tile);
    return p.cluster == 2 ? launch_tiles<shape::m, shape::n, 2, shape::pingpong, grouped_schedule, Epilogue, shape::in_flight>(
                                x, w, prm, args, units, device, sms, epi, stream, w_rows)
                          : launch_tiles<shape::m, shape::n, 1, shape::pingpong, grouped_schedule, Epilogue, shape::in_flight>(
                                x, w, prm, args, units, device, sms, epi, stream, w_rows);
  };
  if (p.pingpong) return clustered(tile_shape<128, 128, true, 2>{});
  if (p.block_m == 64) return p.block_n == 256 ? clustered(tile_shape<64, 256>{}) : clustered(tile_shape<64, 128>{});
  return p.block_n == 256 ? clustered(tile_shape<128, 256>{}) : clustered(tile_shape<128, 128>{});
}

}  // namespace l1_gemm::sm90
