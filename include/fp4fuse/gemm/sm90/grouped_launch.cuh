#pragma once
// The host side of the grouped (MoE) sm_90a GEMM: the launch of a grouped plan (plan.cuh) with
// the grouped schedule (grouped_schedule.cuh) on the dense GEMM's kernels.
#include <cuda/cmath>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "fp4fuse/gemm/sm90/grouped_schedule.cuh"
#include "fp4fuse/gemm/sm90/launch.cuh"
#include "fp4fuse/gemm/sm90/swap_ab.cuh"
#include "fp4fuse/gemm/sm90/workspace.cuh"

namespace fp4fuse::gemm::sm90 {

namespace detail {
/// Launches the swap-AB kernel (swap_ab.cuh) with up to MaxTokens tokens per unit: X's tensor map
/// in boxes of x_box_rows rows, W's in boxes of the unit's 128 W rows, one CTA per SM (at most
/// `units`).
template <int MaxTokens, int Cluster, class Schedule, class Epilogue>
result launch_swap_ab(const __nv_bfloat16* x, const __nv_bfloat16* w, const params& prm, const grouped_arguments& args, int units, int device,
                      int sms, const Epilogue& epi, cudaStream_t stream, std::uint64_t w_rows) {
  using cfg = swap_ab_config<MaxTokens>;
  const char* entry = "fp4fuse::gemm::sm90::launch_grouped (swap-AB)";
  auto* kernel = &gemm_swap_ab_kernel<MaxTokens, Cluster, Schedule, Epilogue>;
  static std::atomic<int> resident_per_device[64];  // 0: not known yet
  persistent_launch<Cluster> launch;
  if (const result r = launch.prepare(kernel, cfg::threads, cfg::smem_bytes, stream, device, sms, resident_per_device, entry); !r) return r;
  CUtensorMap tma_x{}, tma_w{};
  cudaError_t err = make_tensor_map(&tma_x, x, static_cast<std::uint64_t>(prm.K), static_cast<std::uint64_t>(prm.M), cfg::x_box_rows);
  if (err == cudaSuccess) err = make_tensor_map(&tma_w, w, static_cast<std::uint64_t>(prm.K), w_rows, cfg::block_n);
  if (err != cudaSuccess) return tensor_map_failure(err, entry, prm.M, prm.K);
  if (std::getenv("FP4FUSE_GEMM_VERBOSE") != nullptr) {
    std::fprintf(stderr, "sm90 gemm: M=%d N=%d K=%d swap-AB up to %d tokens x %d W rows, cluster %d along W, %d stages: %d units on %u CTAs\n",
                 prm.M, prm.N, prm.K, MaxTokens, cfg::block_n, Cluster, cfg::stages, units, launch.grid(units));
  }
  if (const cudaError_t err = before_launch(epi, stream); err != cudaSuccess) return fp4fuse::cuda_failure(err, entry);
  return launch.launch(kernel, units, entry, tma_x, tma_w, prm, epi, args);
}

/// Whether the schedule's int unit count holds a grouped launch of `rows` rows in `groups` groups,
/// N wide: every group's 64-row blocks times the 128-wide column tiles (the most any plan makes)
/// below 2^30. For rows < 2^30, groups <= max_groups and N < 2^31 the product fits 64 bits.
/// \code
/// static_assert(fp4fuse::gemm::sm90::detail::grouped_units_fit(4096, 32, 5760));
/// \endcode
constexpr bool grouped_units_fit(long long rows, long long groups, long long N) {
  return (rows / 64 + groups + 1) * cuda::ceil_div(N, 128LL) < (1LL << 30);
}

/// The refusals of grouped plan `p` (`whose`: "the forced plan", or plan_grouped's), into `c`: a
/// plan that names no kernel, a swap-AB plan for an epilogue without the swap-AB form
/// (`takes_swap_ab` false), a kernel that this `noun` (call, launch) does not compile with
/// `Kernels` (the sentence names `experimental_call`, the one that does), and a caller's
/// workspace `ws` without the counter a plan takes its units from (`takes_units`). launch_grouped and
/// the moe:: calls' checks (grouped.cuh) both refuse through it, so their sentences agree.
template <class Kernels>
void check_plan(fp4fuse::argument_checker& c, const grouped_plan& p, const char* whose, bool takes_swap_ab, const workspace* ws,
                const char* noun, const char* experimental_call) {
  c.require(valid(p), status::bad_shape, "%s names no kernel of the grouped GEMM", whose);
  if (c && p.swap_ab) c.require(takes_swap_ab, status::bad_shape, "the swap-AB kernel takes the fused NVFP4 epilogue only");
  if (c) {
    c.require(compiles<Kernels>(p), status::bad_shape, "%s names %s, which this %s does not compile: %s does", whose,
              p.swap_ab ? "an experimental swap-AB kernel" : "a kernel that no plan chooses", noun, experimental_call);
  }
  if (c && ws != nullptr) {
    c.require(ws->holds(workspace::size_for(p)), status::null_pointer,
              "workspace has no counter, and this %s's plan (%d x %d %s) takes its units from one (sm90::workspace::size_for(plan))", noun,
              p.block_m, p.block_n, p.pingpong ? "ping-pong" : "cooperative");
    if (c && p.takes_units()) c.aligned(ws->counters, alignof(unsigned), "workspace.counters", "unsigned atomics");
  }
}
}  // namespace detail

/// Launches the grouped GEMM: for every group g, D_g = X[offsets[g] : offsets[g+1]] * W_g^T with
/// W [groups * N, K], the epilogue bound per group through its `for_group` (epilogue.cuh). It
/// refuses, before any CUDA call, groups outside [1, max_groups], null x, w or offsets, rows
/// outside [0, 2^30), N not a positive multiple of 32, K not one of 8, groups * N of 2^31 or
/// more, and a plan it cannot run (detail::check_plan); the moe:: calls (grouped.cuh) check their
/// arguments' memory and the device as well. 0 rows: no kernel, only the epilogue's host work
/// (`before_launch`: the NVFP4 binding clears its scale tensor). The epilogue's host work is
/// queued after every other preparation, just before the kernel. The grid is the resident CTAs
/// (the units depend on the offsets, which the host does not read), so the launch is the same for
/// any routing of `rows` rows. `Kernels`: the kernels it compiles (plan.cuh): `planned_kernels`
/// (those plan_grouped chooses), or `experimental_kernels` (every grouped kernel and the swap-AB
/// kernel) for forced plans that name another.
/// A ping-pong or cooperative 192 x 128 plan's kernel (not the swap-AB's) takes its units in order at run time from a counter
/// (grouped_schedule.cuh's unit_order::taken): `ws`'s first counter (zero before the first launch;
/// every launch leaves it zero), or with `ws` null the one kept for the device and stream, or
/// under stream capture one of the graph's own (workspace.cuh says which launches may overlap).
/// The other plans need no workspace.
/// \code // not compiled: it instantiates the planned grouped kernels for the epilogue; tests/gemm/grouped.cu makes this call through run_bf16()
/// const __nv_bfloat16 *d_x = nullptr, *d_w = nullptr;  // X [4096, 2880] sorted by expert, W [32 * 5760, 2880]
/// const std::int32_t* d_offsets = nullptr;               // [33] prefix sums of the routing counts, device memory
/// const fp4fuse::gemm::moe::epilogue::grouped<fp4fuse::gemm::moe::epilogue::store_bf16, false> epi{{{h, 4096, 5760, 5760}, nullptr}, 5760};
/// const fp4fuse::result r = fp4fuse::gemm::sm90::launch_grouped(d_x, d_w, 4096, 5760, 2880, 32, d_offsets, epi, stream);
/// \endcode
template <class Kernels = planned_kernels, class Epilogue>
result launch_grouped(const __nv_bfloat16* x, const __nv_bfloat16* w, int rows, int N, int K, int groups, const std::int32_t* offsets,
                      const Epilogue& epi, cudaStream_t stream, const grouped_plan* force = nullptr, const workspace* ws = nullptr) {
  static_assert(std::is_same_v<Kernels, planned_kernels> || std::is_same_v<Kernels, experimental_kernels>,
                "launch_grouped: Kernels is planned_kernels or experimental_kernels (plan.cuh)");
  // The shape, the pointers and the plan first: a refusal needs no GPU. The moe:: calls check
  // the rest of their arguments (grouped.cuh's check_launch: the epilogue's outputs among them);
  // these bounds keep the schedule's shared-memory scan and its 32-bit indexing in range for a
  // direct call too.
  fp4fuse::argument_checker c("fp4fuse::gemm::sm90::launch_grouped");
  c.require(groups >= 1 && groups <= max_groups, status::bad_shape, "groups = %d must be in [1, %d]", groups, max_groups);
  c.require(rows >= 0 && rows < (1 << 30) && N >= 32 && N % 32 == 0 && K >= 8 && K % 8 == 0, status::bad_shape,
            "rows = %d, N = %d, K = %d: rows in [0, 2^30), N a positive multiple of 32 and K of 8 are needed", rows, N, K);
  c.not_null(x, "x").aligned(x, 16, "x", "TMA");
  c.not_null(w, "w").aligned(w, 16, "w", "TMA");
  c.not_null(offsets, "offsets").aligned(offsets, 4, "offsets", "int32");
  if (c) {
    c.require(static_cast<long long>(groups) * N < (1ll << 31), status::bad_shape, "groups * N = %lld exceeds 32-bit W row indexing",
              static_cast<long long>(groups) * N);
    c.require(detail::grouped_units_fit(rows, groups, N), status::bad_shape,
              "rows = %d with groups = %d and N = %d give more work units than 32-bit indexing allows", rows, groups, N);
  }
  if (!c) return c.outcome();
  const grouped_plan p = force != nullptr ? *force : plan_grouped(rows, groups, N, K);
  detail::check_plan<Kernels>(c, p, force != nullptr ? "the forced plan" : "plan_grouped's plan", detail::has_swap_ab<detail::unit_epilogue<Epilogue>>,
                              ws, "launch", "launch_grouped<fp4fuse::gemm::sm90::experimental_kernels>");
  if (!c) return c.outcome();
  if (rows == 0) {  // no kernel; the epilogue's host work still runs (the NVFP4 binding clears its scales)
    const cudaError_t err = detail::before_launch(epi, stream);
    return err == cudaSuccess ? result{} : fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90::launch_grouped");
  }
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90::launch_grouped");
  const params prm{rows, N, K, 1, nullptr, nullptr};
  grouped_arguments args{offsets, groups};
  const std::uint64_t w_rows = static_cast<std::uint64_t>(groups) * static_cast<std::uint64_t>(N);
  using schedule = grouped_schedule<detail::group_band_rows<Epilogue>>;
  // The ping-pong and cooperative 192 x 128 kernels take their units at run time
  // (unit_order::taken) from a counter: the caller's, or the one kept for the device and stream
  // (workspace.cuh).
  if (p.takes_units()) {
    if (ws != nullptr) {
      args.counter = ws->counters;  // check_plan: it holds one
    } else if (const result r = detail::unit_counter_for(device, stream, &args.counter); !r) {
      return r;
    }
  }
  if (p.swap_ab) {
    if constexpr (detail::has_swap_ab<detail::unit_epilogue<Epilogue>> && compiles_swap_ab<Kernels>) {
      // An upper bound of the units: every group's token chunks times its W blocks (pairs of them in a cluster).
      const long long bound = (static_cast<long long>(rows) / p.block_m + groups + 1) * cuda::ceil_div(cuda::ceil_div(N, p.block_n), p.cluster);
      const int units = static_cast<int>(std::min<long long>(bound, 1 << 30));
      if (p.cluster == 2) return detail::launch_swap_ab<192, 2, schedule>(x, w, prm, args, units, device, sms, epi, stream, w_rows);
      return detail::launch_swap_ab<192, 1, schedule>(x, w, prm, args, units, device, sms, epi, stream, w_rows);
    } else {
      return result::with(status::bad_shape, "fp4fuse::gemm::sm90::launch_grouped: no swap-AB kernel here");  // refused above
    }
  }
  // An upper bound of the units: every group's row blocks, rounded up per group.
  const int tiles_n = cuda::ceil_div(N, p.block_n);
  const int cluster_m = p.along_n ? 1 : p.cluster, cluster_n = p.along_n ? p.cluster : 1;
  const long long bound = (static_cast<long long>(rows) / p.block_m / cluster_m + groups + 1) * cuda::ceil_div(tiles_n, cluster_n);
  const int units = static_cast<int>(std::min<long long>(bound, 1 << 30));
  return grouped_kernels_for<Kernels>::dispatch(p.key(), "fp4fuse::gemm::sm90::launch_grouped", [&](auto shape) {
    using Shape = decltype(shape);
    using taken = grouped_schedule<detail::group_band_rows<Epilogue>, unit_order::taken>;
    return launch_tiles<Shape, std::conditional_t<Shape::takes_grouped_units, taken, schedule>>(x, w, prm, args, units, device, sms, epi, stream, w_rows);
  });
}

}  // namespace fp4fuse::gemm::sm90
