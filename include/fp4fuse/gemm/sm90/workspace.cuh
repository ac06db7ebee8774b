#pragma once
// The sm_90a GEMM's workspace: for a K split, the FP32 fragment of every split of a tile, and per
// tile and consumer an arrival counter that picks the last split to arrive, which sums them; for a
// grouped launch whose kernel takes its units at run time (the ping-pong kernel and the
// cooperative 192 x 128, grouped_schedule.cuh's unit_order::taken), one counter of the units taken.
//
// Two launches that split K at once must not share a workspace: one's splits would count towards
// the other's arrivals and sum the other's fragments. So a launch either takes a workspace its
// caller owns (`workspace`, sized by `workspace::size_for`: for CUDA-graph capture, or full
// control of memory), or `launch` takes the one it keeps for the launch's device and stream.
//
// Which launches may run concurrently: any whose workspaces differ, and launches that do not
// split K (they use none). Launches without a caller-owned workspace get one per (device,
// stream), so they may run concurrently on different streams (or devices), and launches on one
// stream are ordered by it; this holds for nullptr, cudaStreamLegacy and cudaStreamPerThread
// too, each taken as the stream it stands for in the calling thread. A caller-owned workspace is
// like an output buffer: launches that may overlap (two streams, two graphs) need one each.
//
// A grouped launch's unit counter: the caller's (`workspace::counters`, at least one), or else
// one kept for the launch's device and stream (allocated on first use, never freed), or, for a
// launch captured into a graph, one of the graph's own (allocated at capture, never freed: 4
// bytes per captured launch). Launches that may overlap must not share a counter: a caller's
// counter serves one launch at a time, and a graph's own counter serves one replay at a time (the
// replays of one executable graph are ordered; two instantiations of one graph share it, as do
// two child-graph nodes made of one captured graph). A counter left nonzero (a launch aborted on
// the device) makes the next launch skip units: like the split-K counters, it must be zero.
#include <cuda/cmath>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "fp4fuse/launch.cuh"
#include "fp4fuse/status.hpp"

#include "fp4fuse/gemm/sm90/plan.cuh"

namespace fp4fuse::gemm::sm90 {

/// What a split-K launch needs: floats of partial fragments and arrival counters.
struct workspace_size {
  std::size_t partial_floats = 0;  ///< floats of partial fragments
  std::size_t counter_count = 0;   ///< arrival counters
};

/// A split-K workspace in device memory of the launch's device. The partials need no initial
/// value. The counters must be zero before the first launch that uses them, and the owner zeroes
/// them once, after allocating (cudaMemsetAsync(counters, 0, counter_count * sizeof(unsigned),
/// stream)): every launch that runs to completion leaves each counter it used zero again (the last
/// split of each tile resets its counter), so the same workspace then serves any later launch it
/// is large enough for, in or out of a graph. A launch aborted on the device leaves them undefined.
struct workspace {
  float* partials = nullptr;        ///< the splits' FP32 fragments
  unsigned* counters = nullptr;     ///< per tile and consumer, zero between launches
  std::size_t partial_floats = 0;   ///< floats at `partials`
  std::size_t counter_count = 0;    ///< counters at `counters`

  /// What a launch of plan `lp` on an M x N x K problem needs, both counts 0 where it does not
  /// split K. `lp`: the plan `launch` runs, the forced one or plan(M, N, K, the device's SM count,
  /// whether it stages the store: that changes no split);
  /// its split is clamped to K's blocks as `launch` clamps it.
  /// \code
  /// const fp4fuse::gemm::sm90::launch_plan lp{128, /*splits=*/4, 0, 0, -1, 0, /*block_m=*/64};
  /// const fp4fuse::gemm::sm90::workspace_size need = fp4fuse::gemm::sm90::workspace::size_for(lp, 64, 7168, 2048);  // 1835008 floats, 112 counters
  /// \endcode
  static workspace_size size_for(const launch_plan& lp, int M, int N, int K) {
    const int splits = std::max(1, std::min(lp.splits, cuda::ceil_div(K, block_k)));
    if (splits == 1) return {};
    const std::size_t tiles = static_cast<std::size_t>(cuda::ceil_div(M, lp.block_m)) * cuda::ceil_div(N, lp.block_n);
    const std::size_t registers = consumer_columns(lp.block_m, lp.block_n) / 2;  // accumulators per consumer thread
    return {tiles * splits * 2 * registers * 128, tiles * 2};
  }
  /// What a grouped launch of plan `gp` needs: one counter where its kernel takes its units at
  /// run time (`gp.takes_units()`: the ping-pong's and the cooperative 192 x 128's plans), nothing
  /// otherwise.
  /// \code
  /// static_assert(fp4fuse::gemm::sm90::workspace::size_for(fp4fuse::gemm::sm90::grouped_plan{128, 128, 2, true, true}).counter_count == 1);
  /// \endcode
  static constexpr workspace_size size_for(const grouped_plan& gp) {
    return gp.takes_units() ? workspace_size{0, 1} : workspace_size{};
  }
  /// True when this workspace has room for `need`.
  /// \code
  /// fp4fuse::gemm::sm90::workspace ws{};  // the caller's: partials and counters from cudaMalloc, the counters zeroed once
  /// if (!ws.holds({1835008, 112})) { /* grow it before the launch */ }
  /// \endcode
  bool holds(const workspace_size& need) const {
    return (need.partial_floats == 0 || (partials != nullptr && partial_floats >= need.partial_floats)) &&
           (need.counter_count == 0 || (counters != nullptr && counter_count >= need.counter_count));
  }
};

namespace detail {

/// Replaces `*buffer` (`*count` elements of `T`) by one of `need` elements: the old buffer freed,
/// the new one allocated (nothing on failure: `*buffer` null, `*count` 0, the error as a result).
template <class T>
inline fp4fuse::result regrow(T** buffer, std::size_t* count, std::size_t need) {
  if (*buffer != nullptr) {
    const cudaError_t freed = cudaFree(*buffer);
    *buffer = nullptr;
    *count = 0;
    if (freed != cudaSuccess) return fp4fuse::cuda_failure(freed, "fp4fuse::gemm::sm90 workspace (freeing the smaller buffer)");
  }
  if (const cudaError_t err = cudaMalloc(buffer, need * sizeof(T)); err != cudaSuccess) {
    *buffer = nullptr;
    return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90 workspace");
  }
  *count = need;
  return {};
}

/// Grows `ws`, too small, to hold `need`, zeroing new counters on `stream`, in the calling thread's
/// capture mode. `ws` serves `stream` only: its old buffers may still be read by launches queued there, so
/// the stream is drained before they go.
inline fp4fuse::result grow_workspace(workspace& ws, const workspace_size& need, cudaStream_t stream) {
  cudaError_t err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90 workspace");
  if (need.partial_floats > ws.partial_floats) {
    if (const fp4fuse::result r = regrow(&ws.partials, &ws.partial_floats, need.partial_floats); !r) return r;
  }
  if (need.counter_count > ws.counter_count) {
    if (const fp4fuse::result r = regrow(&ws.counters, &ws.counter_count, need.counter_count); !r) return r;
    if ((err = cudaMemsetAsync(ws.counters, 0, need.counter_count * sizeof(unsigned), stream)) != cudaSuccess) {
      ws.counter_count = 0;  // not zeroed: the next launch allocates and zeroes again
      return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90 workspace");
    }
  }
  return {};
}

/// `grow_workspace` where `ws` is too small (no CUDA call otherwise). `stream` is not being
/// captured (the caller refuses that), but another stream may be: the drain, the free and the
/// allocation run in relaxed capture mode, as `new_unit_counter`'s calls do, so that a capture in
/// global mode elsewhere neither refuses them nor is invalidated by them.
inline fp4fuse::result reserve_workspace(workspace& ws, const workspace_size& need, cudaStream_t stream) {
  if (need.partial_floats <= ws.partial_floats && need.counter_count <= ws.counter_count) return {};  // no CUDA call
  const fp4fuse::detail::relaxed_capture_mode relaxed;
  if (relaxed.status() != cudaSuccess) return fp4fuse::cuda_failure(relaxed.status(), "fp4fuse::gemm::sm90 workspace");
  return grow_workspace(ws, need, stream);
}

/// The workspace `launch` keeps for one (device, stream), and the lock its user holds from
/// growing it until its kernel is queued (two host threads may launch on one stream).
struct stream_workspace {
  std::mutex mutex;
  workspace ws;
  unsigned* unit_counter = nullptr;  ///< a grouped launch's unit counter: allocated once, zero between launches, never freed
};

/// The workspace kept for `stream` on `device`, created empty on first use. Keyed by the stream's
/// id (cudaStreamGetId), which resolves nullptr, cudaStreamLegacy and cudaStreamPerThread to the
/// stream they stand for in the calling thread and, unlike a handle, is never reused by a stream
/// created after another was destroyed. Kept until the process ends (a destroyed stream's
/// launches may still be running): programs that create streams without end should pass their
/// own workspace.
inline fp4fuse::result cached_workspace(int device, cudaStream_t stream, stream_workspace** out) {
  unsigned long long id = 0;
  if (const cudaError_t err = cudaStreamGetId(stream, &id); err != cudaSuccess) return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90 workspace");
  static std::mutex mutex;
  static std::map<std::pair<int, unsigned long long>, stream_workspace> cache;  // map nodes never move
  const std::lock_guard<std::mutex> lock(mutex);
  *out = &cache[{device, id}];
  return {};
}

/// A new unit counter, zeroed: allocated in relaxed capture mode on a private stream with
/// stream-ordered calls only, so also while `stream`, or another stream, is being captured (both
/// measured to leave a capture intact), and zero before any launch, captured or not, reads it.
/// Never freed.
inline fp4fuse::result new_unit_counter(unsigned** out) {
  const char* entry = "fp4fuse::gemm::sm90 workspace (the grouped unit counter)";
  const fp4fuse::detail::relaxed_capture_mode relaxed;
  if (relaxed.status() != cudaSuccess) return fp4fuse::cuda_failure(relaxed.status(), entry);
  unsigned* counter = nullptr;
  cudaStream_t zeroing = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&zeroing, cudaStreamNonBlocking);
  if (err == cudaSuccess) err = cudaMallocAsync(&counter, sizeof(unsigned), zeroing);
  if (err == cudaSuccess) err = cudaMemsetAsync(counter, 0, sizeof(unsigned), zeroing);
  if (err != cudaSuccess && counter != nullptr) (void)cudaFreeAsync(counter, zeroing);
  if (zeroing != nullptr) {
    const cudaError_t synced = cudaStreamSynchronize(zeroing);
    if (err == cudaSuccess) err = synced;
    (void)cudaStreamDestroy(zeroing);
  }
  if (err != cudaSuccess) return fp4fuse::cuda_failure(err, entry);
  *out = counter;
  return {};
}

/// The unit counter of a grouped launch on `stream` without the caller's: outside a capture, the
/// one kept for (`device`, `stream`), made on first use; while `stream` is being captured, a new
/// one, the graph's own (cudaStreamGetId, the kept counters' key, is refused for a capturing
/// stream and invalidates the capture, measured; and a graph's own counter is not shared with
/// the stream's later launches, which may run while the graph does).
inline fp4fuse::result unit_counter_for(int device, cudaStream_t stream, unsigned** out) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (const cudaError_t err = cudaStreamIsCapturing(stream, &capture); err != cudaSuccess) {
    return fp4fuse::cuda_failure(err, "fp4fuse::gemm::sm90 workspace (the grouped unit counter)");
  }
  if (capture != cudaStreamCaptureStatusNone) return new_unit_counter(out);
  stream_workspace* kept = nullptr;
  if (const fp4fuse::result r = cached_workspace(device, stream, &kept); !r) return r;
  const std::lock_guard<std::mutex> lock(kept->mutex);
  if (kept->unit_counter == nullptr) {
    if (const fp4fuse::result r = new_unit_counter(&kept->unit_counter); !r) return r;
  }
  *out = kept->unit_counter;
  return {};
}

}  // namespace detail

}  // namespace fp4fuse::gemm::sm90
