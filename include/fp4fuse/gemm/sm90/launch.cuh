#pragma once
// The host side of the sm_90a GEMM: tensor maps, the launch of one kernel instance (a row of a
// kernel_list, plan.cuh) with a schedule, and the dense GEMM's dispatch of a plan to its instance
// with its split-K workspace (the grouped GEMM's: grouped_launch.cuh, through the same table).
#include <cuda/cmath>
#include <cuda.h>          // CUtensorMap (types only: the driver entry point is fetched at run time)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <type_traits>

#include "fp4fuse/launch.cuh"
#include "fp4fuse/status.hpp"

#include "fp4fuse/gemm/epilogues.cuh"
#include "fp4fuse/gemm/sm90/kernels.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"
#include "fp4fuse/gemm/sm90/staged_store.cuh"
#include "fp4fuse/gemm/sm90/workspace.cuh"

namespace fp4fuse::gemm::sm90 {

/// A 2D row-major BF16 tensor map [outer, inner] with a box of [box_outer, 64] and 128-byte swizzle;
/// rows `row_elements` apart (0: inner, the operands' case).
/// \code
/// const __nv_bfloat16* d_x = nullptr;  // X [M, K] in device memory
/// CUtensorMap map{};
/// const cudaError_t err = fp4fuse::gemm::sm90::make_tensor_map(&map, d_x, K, M, 128);  // boxes of 128 rows x 64 columns
/// \endcode
inline cudaError_t make_tensor_map(CUtensorMap* map, const __nv_bfloat16* base, std::uint64_t inner, std::uint64_t outer,
                                   std::uint32_t box_outer, std::uint64_t row_elements = 0) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      fn = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  if (encode == nullptr) return cudaErrorNotSupported;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {(row_elements != 0 ? row_elements : inner) * sizeof(__nv_bfloat16)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(block_k), box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(base), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

namespace detail {
/// True for epilogues with host work to queue just before their kernel:
/// `cudaError_t before_launch(cudaStream_t) const` (grouped.cuh's NVFP4 binding clears its scale
/// tensor there).
template <class Epilogue, class = void>
inline constexpr bool has_before_launch = false;
template <class Epilogue>
inline constexpr bool has_before_launch<Epilogue, std::void_t<decltype(std::declval<const Epilogue&>().before_launch(cudaStream_t{}))>> = true;

/// Queues `epi`'s host work on `stream` (cudaSuccess for an epilogue without any). The launchers
/// call it after every other preparation (kernel attributes, occupancy, tensor maps), so that once
/// an output has been written only the kernel's launch itself can still fail.
template <class Epilogue>
cudaError_t before_launch(const Epilogue& epi, cudaStream_t stream) {
  if constexpr (has_before_launch<Epilogue>) {
    return epi.before_launch(stream);
  } else {
    return cudaSuccess;
  }
}

/// One launch of a persistent sm_90a kernel in clusters of `Cluster` CTAs (launch_tiles and the
/// swap-AB launcher): the launch configuration, the shared-memory opt-in on every call (cheap, and a
/// context re-created by cudaDeviceReset starts without it), and once per kernel and device (kept
/// in the caller's `cache` only when they succeed) the image check and the clusters resident at
/// once, which bound the grid. Not copyable: the configuration points at its own attribute.
template <int Cluster>
class persistent_launch {
 public:
  persistent_launch() = default;
  persistent_launch(const persistent_launch&) = delete;
  persistent_launch& operator=(const persistent_launch&) = delete;
  /// Prepares `kernel` with `threads` threads and `smem_bytes` of dynamic shared memory a CTA.
  template <class Kernel>
  result prepare(Kernel* kernel, unsigned threads, std::size_t smem_bytes, cudaStream_t stream, int device, int sms,
                 std::atomic<int> (&cache)[64], const char* entry) {
    cluster_dims_.id = cudaLaunchAttributeClusterDimension;
    cluster_dims_.val.clusterDim.x = Cluster;
    cluster_dims_.val.clusterDim.y = 1;
    cluster_dims_.val.clusterDim.z = 1;
    config_.blockDim = dim3(threads);
    config_.dynamicSmemBytes = smem_bytes;
    config_.stream = stream;
    config_.attrs = &cluster_dims_;
    config_.numAttrs = 1;
    if (device < 0 || device >= 64) return fp4fuse::cuda_failure(cudaErrorInvalidDevice, entry);
    resident_ = cache[device].load(std::memory_order_relaxed);
    if (resident_ == 0) {
      if (const result image = fp4fuse::check_kernel_image(kernel, entry); !image) return image;
    }
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes));
    if (err != cudaSuccess) return fp4fuse::cuda_failure(err, entry);
    if (resident_ == 0) {
      resident_ = sms / Cluster;  // clusters that fit at once (1 CTA per SM)
      if constexpr (Cluster > 1) {
        config_.gridDim = dim3(static_cast<unsigned>(Cluster * resident_));
        if ((err = cudaOccupancyMaxActiveClusters(&resident_, kernel, &config_)) != cudaSuccess) return fp4fuse::cuda_failure(err, entry);
        if (resident_ < 1) return fp4fuse::cuda_failure(cudaErrorInvalidConfiguration, entry);
      }
      cache[device].store(resident_, std::memory_order_relaxed);
    }
    return {};
  }
  /// The clusters resident at once (after `prepare`).
  int resident() const { return resident_; }
  /// The grid for `units` work units: one cluster per unit, at most the resident clusters (CTAs).
  unsigned grid(int units) const { return static_cast<unsigned>(Cluster * std::min(units, resident_)); }
  /// Launches `kernel` (prepared) on grid(units) CTAs with `args`.
  template <class Kernel, class... Args>
  result launch(Kernel* kernel, int units, const char* entry, const Args&... args) {
    config_.gridDim = dim3(grid(units));
    // cudaLaunchKernelEx returns the launch's own error: the runtime's last error could be an
    // earlier one of the caller's.
    if (const cudaError_t err = cudaLaunchKernelEx(&config_, kernel, args...); err != cudaSuccess) return fp4fuse::cuda_failure(err, entry);
    return {};
  }

 private:
  cudaLaunchConfig_t config_{};
  cudaLaunchAttribute cluster_dims_{};
  int resident_ = 0;
};

/// The refusal of a TMA tensor map of X [M, K] or W that cuTensorMapEncodeTiled did not encode.
inline result tensor_map_failure(cudaError_t err, const char* entry, int M, int K) {
  result r = result::with(status::cuda_error,
                          "%s: the TMA tensor maps of X [%d, %d] and W could not be encoded (%s): the driver has no "
                          "cuTensorMapEncodeTiled, or it refused X's or W's base address, row pitch or extent",
                          entry, M, K, err == cudaErrorNotSupported ? "no driver entry point" : "cuTensorMapEncodeTiled failed");
  r.cuda = err;
  return r;
}
}  // namespace detail

/// Launches the kernel instance `Shape` (tile_shape, plan.cuh) with schedule `Schedule`
/// (schedule.cuh): tensor maps whose boxes are what each CTA's producer loads (192-row tiles: X in
/// 64-row boxes; otherwise half of the shared
/// operand's tile in a cluster), shared-memory size, cluster shape, a persistent grid of at most the
/// resident CTAs. `units`: the schedule's units, or an upper bound where they depend on data (the
/// grid's size only).
/// \code
/// const __nv_bfloat16 *d_x = nullptr, *d_w = nullptr;  // X [128, 512], W [256, 512] in device memory
/// const fp4fuse::gemm::store_bf16 epi{fp4fuse::matrix_view<__nv_bfloat16>{h, 128, 256, 256}};  // D [128, 256]: 2 x 2 tiles of 64 x 128
/// const fp4fuse::result r = fp4fuse::gemm::sm90::launch_tiles<fp4fuse::gemm::sm90::tile_shape<64, 128, 1>, fp4fuse::gemm::sm90::dense_schedule>(
///     d_x, d_w, {128, 256, 512, 1, nullptr, nullptr}, {}, /*units=*/4, /*device=*/0, /*sms=*/132, epi, stream);
/// \endcode
template <class Shape, class Schedule, class Epilogue>
result launch_tiles(const __nv_bfloat16* x, const __nv_bfloat16* w, params prm, const typename Schedule::arguments& sched_args, int units,
                    int device, int sms, const Epilogue& epi, cudaStream_t stream, std::uint64_t w_rows = 0) {
  constexpr int BlockM = Shape::m, BlockN = Shape::n, Cluster = Shape::cluster;
  constexpr bool Pingpong = Shape::pingpong, AlongN = Shape::along_n;
  using cfg = config<BlockN, BlockM>;
  auto* kernel = [] {
    if constexpr (Pingpong && detail::is_staged<Epilogue>) {
      return &gemm_pingpong_staged_kernel<Cluster, Shape::in_flight, Schedule, Epilogue, AlongN>;
    } else if constexpr (Pingpong) {
      return &gemm_pingpong_kernel<Cluster, Shape::in_flight, Schedule, Epilogue, AlongN>;
    } else if constexpr (detail::is_staged<Epilogue>) {
      return &gemm_staged_kernel<BlockM, BlockN, Cluster, Schedule, Epilogue, AlongN>;
    } else {
      return &gemm_kernel<BlockM, BlockN, Cluster, Schedule, Epilogue, AlongN>;
    }
  }();
  const char* entry = "fp4fuse::gemm::sm90::launch";
  constexpr std::size_t smem_bytes = detail::staged_smem_bytes<cfg, detail::is_staged<Epilogue>>;
  static std::atomic<int> resident_per_device[64];  // 0: not known yet
  detail::persistent_launch<Cluster> launch;
  if (const result r = launch.prepare(kernel, cfg::threads, smem_bytes, stream, device, sms, resident_per_device, entry); !r) return r;
  CUtensorMap tma_x{}, tma_w{};
  // X's box: the tile, or half of it along N; tiles that skip empty fragments load 64-row boxes; a
  // lone 64-row tile over fewer rows of X only those (x_box_rows).
  const std::uint32_t x_box = cfg::skips_empty_fragments ? 64u : AlongN ? BlockM / Cluster : static_cast<std::uint32_t>(x_box_rows<cfg, Cluster>(prm.M));
  cudaError_t err = make_tensor_map(&tma_x, x, static_cast<std::uint64_t>(prm.K), static_cast<std::uint64_t>(prm.M), x_box);
  if (err == cudaSuccess) {
    // W's rows: N, or for a grouped launch every group's N (w_rows).
    err = make_tensor_map(&tma_w, w, static_cast<std::uint64_t>(prm.K), w_rows != 0 ? w_rows : static_cast<std::uint64_t>(prm.N),
                          AlongN ? BlockN : BlockN / Cluster);
  }
  if (err != cudaSuccess) return detail::tensor_map_failure(err, entry, prm.M, prm.K);
  if (std::getenv("FP4FUSE_GEMM_VERBOSE") != nullptr) {
    std::fprintf(stderr, "sm90 gemm: M=%d N=%d K=%d %s tile %dx%d split %d cluster %d%s%s: %d units on %u CTAs (%d clusters resident)\n",
                 prm.M, prm.N, prm.K, Pingpong ? "ping-pong" : "cooperative", BlockM, BlockN, prm.splits, Cluster, AlongN ? " along N" : "",
                 detail::is_staged<Epilogue> ? ", BF16 store staged through TMA" : "", units, launch.grid(units), launch.resident());
  }
  if (const cudaError_t err = detail::before_launch(epi, stream); err != cudaSuccess) return fp4fuse::cuda_failure(err, entry);
  return launch.launch(kernel, units, entry, tma_x, tma_w, prm, epi, sched_args);
}

namespace detail {
/// True where TMA can address a plain BF16 store's output (16-byte aligned rows: TMA's rule for a
/// tensor's base and row stride), so that the kernels of 128-row tiles can stage it.
inline bool stageable(const fp4fuse::gemm::store_bf16<fp4fuse::no_bias>& epi) {
  const auto& d = epi.out;
  return reinterpret_cast<std::uintptr_t>(d.data) % 16 == 0 && (d.ld * 2) % 16 == 0;
}
/// The staged form of a plain BF16 store (staged_store.cuh) where it is `stageable`, in `staged`;
/// false otherwise (the store stays direct).
inline bool stage_store(const fp4fuse::gemm::store_bf16<fp4fuse::no_bias>& epi, staged_bf16_store& staged) {
  static_assert(block_k == 64, "stage_store: D's tensor map takes the operands' 64-column box, which staged_fragment_store writes");
  const auto& d = epi.out;
  if (!stageable(epi)) return false;
  return make_tensor_map(&staged.map, d.data, static_cast<std::uint64_t>(d.cols), static_cast<std::uint64_t>(d.rows), 64,
                         static_cast<std::uint64_t>(d.ld)) == cudaSuccess;
}
}  // namespace detail

/// Launches the GEMM with epilogue `epi`. The caller (fp4fuse::gemm::gemm) has validated the arguments
/// and `force` (validate_plan), and checked that the device is an sm_90 with this build's sm_90a
/// image. `force` overrides the plan (tests use it to cover every tile width and split). `ws`: the
/// caller's split-K workspace (workspace.cuh), or null for the one kept for the device and
/// stream; a launch that splits K while `stream` is being captured needs the caller's (the kept
/// one may be freed when it grows, and a graph would keep its address), and is refused without.
/// \code // not compiled: it instantiates every sm_90a dense kernel for the epilogue; tests/gemm/dense.cu makes this call through gemm()
/// const __nv_bfloat16 *d_x = nullptr, *d_w = nullptr;  // X [256, 8192], W [512, 8192], checked as gemm() checks them
/// const fp4fuse::matrix_view<__nv_bfloat16> d{h, 256, 512, 512};  // D [256, 512]
/// const fp4fuse::gemm::sm90::launch_plan force{128, 4};  // 128 x 128 tiles, K split 4 ways (validate_plan accepts it)
/// const fp4fuse::result r = fp4fuse::gemm::sm90::launch(d_x, d_w, 256, 512, 8192, fp4fuse::gemm::store_bf16{d}, stream, &force);
/// \endcode
template <class Epilogue>
result launch(const __nv_bfloat16* x, const __nv_bfloat16* w, int M, int N, int K, const Epilogue& epi,
                       cudaStream_t stream, const launch_plan* force = nullptr, const workspace* ws = nullptr) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90::launch");
  // A plain BF16 store of 128-row tiles (ping-pong or cooperative) is staged through shared memory
  // and TMA where TMA can address D (staged_store.cuh); the plan knows (plan.cuh).
  constexpr bool plain_store = std::is_same_v<Epilogue, fp4fuse::gemm::store_bf16<fp4fuse::no_bias>>;
  bool stageable = false;
  if constexpr (plain_store) stageable = detail::stageable(epi);
  constexpr int granule = column_granule<Epilogue>;
  launch_plan lp = force != nullptr ? *force : plan(M, N, K, sms, stageable, granule);
  if (!holds_column_granule(lp.block_m, lp.block_n, granule)) {
    return result::with(status::bad_shape,
                        "fp4fuse::gemm::sm90::launch: %d x %d tiles give a consumer warpgroup %d gate/up columns, not a whole number of the "
                        "epilogue's granule of %d (an NVFP4 block spans 32)",
                        lp.block_m, lp.block_n, consumer_columns(lp.block_m, lp.block_n), granule);
  }
  lp.splits = std::max(1, std::min(lp.splits, cuda::ceil_div(K, block_k)));
  lp.cluster = cluster_for(lp, M);
  const std::int64_t units = dense_units(lp, M, N);
  if (units > max_dense_units) {
    return result::with(status::bad_shape,
                        "fp4fuse::gemm::sm90::launch: M = %d, N = %d with %d x %d tiles and %d K splits give %lld work units, more than "
                        "the kernels' 2^30",
                        M, N, lp.block_m, lp.block_n, lp.splits, static_cast<long long>(units));
  }
  lp.units = static_cast<int>(units);
  params prm{M, N, K, lp.splits, nullptr, nullptr};
  const int u = lp.units;
  const dense_schedule::arguments dense{};
  const kernel_key key = dense_key(lp, lp.cluster);
  detail::staged_bf16_store staged{};
  bool use_staged = false;  // the tensor map encoded only for a plan that stages
  if constexpr (plain_store) use_staged = stageable && lp.block_m == 128 && detail::stage_store(epi, staged);
  const auto run = [&] {
    return dense_kernels::dispatch(key, "fp4fuse::gemm::sm90::launch", [&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (!holds_column_granule(Shape::m, Shape::n, granule)) {
        return result::with(status::bad_shape, "fp4fuse::gemm::sm90::launch: the epilogue takes no %d x %d tiles", Shape::m, Shape::n);  // refused above
      } else {
        if constexpr (Shape::m == 128 && plain_store) {
          if (use_staged) return launch_tiles<Shape, dense_schedule>(x, w, prm, dense, u, device, sms, staged, stream);
        }
        return launch_tiles<Shape, dense_schedule>(x, w, prm, dense, u, device, sms, epi, stream);
      }
    });
  };
  if (lp.splits == 1) return run();
  const workspace_size need = workspace::size_for(lp, M, N, K);
  if (ws != nullptr) {
    if (ws->partials == nullptr || ws->counters == nullptr) {
      return result::with(status::null_pointer, "fp4fuse::gemm::sm90::launch: the workspace's partials or counters are null");
    }
    if (!fp4fuse::is_aligned(ws->partials, alignof(float)) || !fp4fuse::is_aligned(ws->counters, alignof(unsigned))) {
      return result::with(status::misaligned_pointer,
                          "fp4fuse::gemm::sm90::launch: the workspace's partials and counters must be 4-byte aligned (float stores, unsigned atomics)");
    }
    if (!ws->holds(need)) {
      return result::with(status::bad_shape,
                          "fp4fuse::gemm::sm90::launch: the workspace holds %zu partial floats and %zu counters; this problem's plan needs %zu and %zu",
                          ws->partial_floats, ws->counter_count, need.partial_floats, need.counter_count);
    }
    prm.partials = ws->partials;
    prm.counters = ws->counters;
    return run();
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if ((err = cudaStreamIsCapturing(stream, &capture)) != cudaSuccess) return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90::launch");
  if (capture != cudaStreamCaptureStatusNone) {
    return fp4fuse::cuda_failure(cudaErrorStreamCaptureUnsupported,
                                               "fp4fuse::gemm::sm90::launch (a K split under stream capture needs the caller's workspace)");
  }
  detail::stream_workspace* kept = nullptr;
  if (const result r = detail::cached_workspace(device, stream, &kept); !r) return r;
  const std::lock_guard<std::mutex> lock(kept->mutex);  // until the kernel is queued
  if (const result r = detail::reserve_workspace(kept->ws, need, stream); !r) return r;
  prm.partials = kept->ws.partials;
  prm.counters = kept->ws.counters;
  return run();
}

}  // namespace fp4fuse::gemm::sm90
