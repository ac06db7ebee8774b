// gemm/sm90/workspace.cuh: on the host, the workspace a plan needs (a K split's partial sums and
// tile counters, the unit counter of a grouped plan that takes its units) and whether a caller's workspace holds
// it; on a GPU, growing the kept workspace while another stream is being captured, and the kept
// workspace and unit counter after cudaDeviceReset.
#include <fp4fuse/gemm/sm90/workspace.cuh>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "../../test_support.hpp"

TEST_CASE("workspace: the split-K workspace sizes", "[gemm][workspace]") {
  using fp4fuse::gemm::sm90::workspace;
  const fp4fuse::gemm::sm90::launch_plan split4{128, 4, 0, 1, 0};
  // 128 x 512: 4 tiles of 128 x 128, 2 consumers of 64 accumulators per thread, 4 splits.
  const fp4fuse::gemm::sm90::workspace_size need = workspace::size_for(split4, 128, 512, 8192);
  CHECK(need.partial_floats == std::size_t(4) * 4 * 2 * 64 * 128);
  CHECK(need.counter_count == 8);
  CHECK(workspace::size_for(split4, 128, 512, 128).partial_floats == std::size_t(4) * 2 * 2 * 64 * 128);  // 2 K blocks: 2 splits
  CHECK(workspace::size_for(split4, 128, 512, 64).counter_count == 0);  // 1 K block: no split, no workspace
  CHECK(workspace::size_for(fp4fuse::gemm::sm90::launch_plan{128, 1, 0, 1, 0}, 128, 512, 8192).partial_floats == 0);
  // 64 x 32 tiles, 3 splits, 37 x 200: 7 tiles of one consumer with 16 accumulators (both slots kept).
  const fp4fuse::gemm::sm90::workspace_size decode = workspace::size_for(fp4fuse::gemm::sm90::launch_plan{32, 3, 0, 1, 0, 0, 64}, 37, 200, 80 * 64);
  CHECK(decode.partial_floats == std::size_t(7) * 3 * 2 * 16 * 128);
  CHECK(decode.counter_count == 14);
  float partial = 0;
  unsigned counter = 0;
  CHECK_FALSE(workspace{}.holds(need));
  CHECK(workspace{&partial, &counter, need.partial_floats, need.counter_count}.holds(need));
  CHECK_FALSE(workspace{&partial, &counter, need.partial_floats, need.counter_count - 1}.holds(need));
  CHECK(workspace{}.holds(fp4fuse::gemm::sm90::workspace_size{}));
}

TEST_CASE("workspace: a grouped plan needs a unit counter exactly where its kernel takes its units (ping-pong, 192 x 128)", "[gemm][workspace]") {
  using fp4fuse::gemm::sm90::grouped_plan;
  using fp4fuse::gemm::sm90::workspace;
  for (const grouped_plan& p : {grouped_plan{128, 128, 1, true}, grouped_plan{128, 128, 2, true}, grouped_plan{128, 128, 2, true, true},
                                grouped_plan{192, 128, 2, false, true}}) {
    CHECK(p.takes_units());
    CHECK(workspace::size_for(p).counter_count == 1);
    CHECK(workspace::size_for(p).partial_floats == 0);
  }
  // The fixed order: the other cooperative tiles, and the swap-AB kernel (whose block_m, 192, is tokens).
  for (const grouped_plan& p : {grouped_plan{64, 256, 1, false}, grouped_plan{64, 128, 2, false}, grouped_plan{128, 256, 2, false},
                                grouped_plan{128, 128, 2, false}, grouped_plan{192, 128, 1, false, false, true},
                                grouped_plan{192, 128, 2, false, true, true}}) {
    CHECK_FALSE(p.takes_units());
    CHECK(workspace::size_for(p).counter_count == 0);
    CHECK(workspace::size_for(p).partial_floats == 0);
  }
  // The launch picks the taken order by its instance's takes_grouped_units: the same answer for
  // every grouped instance as its plan's takes_units().
  int instances = 0;
  for (const grouped_plan& p : {grouped_plan{64, 256, 1, false}, grouped_plan{64, 128, 1, false}, grouped_plan{128, 256, 1, false},
                                grouped_plan{128, 128, 1, false}, grouped_plan{128, 128, 1, true}, grouped_plan{64, 256, 2, false},
                                grouped_plan{64, 128, 2, false}, grouped_plan{128, 256, 2, false}, grouped_plan{128, 128, 2, false},
                                grouped_plan{128, 128, 2, true}, grouped_plan{128, 128, 2, true, true}, grouped_plan{192, 128, 2, false, true}}) {
    INFO("plan " << p.block_m << "x" << p.block_n << " cluster " << p.cluster << (p.pingpong ? " ping-pong" : "") << (p.along_n ? " along N" : ""));
    const fp4fuse::result r = fp4fuse::gemm::sm90::grouped_kernels::dispatch(p.key(), "test", [&](auto shape) {
      CHECK(decltype(shape)::takes_grouped_units == p.takes_units());
      return fp4fuse::result{};
    });
    CHECK(static_cast<bool>(r));  // the key names an instance, so the lambda ran
    ++instances;
  }
  CHECK(instances == fp4fuse::gemm::sm90::grouped_kernels::size);
  unsigned counter = 0;
  CHECK(workspace{nullptr, &counter, 0, 1}.holds(workspace::size_for(grouped_plan{128, 128, 2, true, true})));
  CHECK_FALSE(workspace{}.holds(workspace::size_for(grouped_plan{128, 128, 2, true, true})));
}

TEST_CASE("workspace [gpu]: growing a workspace while another stream is captured leaves that capture intact", "[gpu][gemm][workspace]") {
  // A K split's kept workspace grows on its own stream (drain, free, allocate, zero). A capture
  // in global mode on another stream prohibits those calls in this thread unless they run in
  // relaxed mode: they would fail and invalidate that capture.
  using fp4fuse::gemm::sm90::workspace;
  using fp4fuse::gemm::sm90::workspace_size;
  for (const cudaStreamCaptureMode mode : {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed}) {
    INFO("capture mode " << static_cast<int>(mode));
    cudaStream_t captured = nullptr, own = nullptr;
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&captured, cudaStreamNonBlocking));
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    workspace ws{};
    // From nothing, then larger (the old buffers freed): each inside a capture of `captured`.
    for (const workspace_size need : {workspace_size{1 << 16, 40}, workspace_size{1 << 18, 300}}) {
      FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(captured, mode));
      const fp4fuse::result r = fp4fuse::gemm::sm90::detail::reserve_workspace(ws, need, own);
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      FP4FUSE_TEST_CUDA(cudaStreamIsCapturing(captured, &status));
      CHECK(status == cudaStreamCaptureStatusActive);
      cudaGraph_t graph = nullptr;
      CHECK(cudaStreamEndCapture(captured, &graph) == cudaSuccess);
      if (graph != nullptr) FP4FUSE_TEST_CUDA(cudaGraphDestroy(graph));
      (void)cudaGetLastError();
      INFO(r.message());
      REQUIRE(static_cast<bool>(r));
      REQUIRE(ws.holds(need));
      FP4FUSE_TEST_CUDA(cudaStreamSynchronize(own));
      std::vector<unsigned> counters(need.counter_count, 1u);
      FP4FUSE_TEST_CUDA(cudaMemcpy(counters.data(), ws.counters, counters.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
      CHECK(std::all_of(counters.begin(), counters.end(), [](unsigned c) { return c == 0u; }));  // zeroed
    }
    // Counters written nonzero, then grown by one: the old block freed, a new one allocated (the
    // allocator tends to hand the freed, dirty block back) and zeroed.
    FP4FUSE_TEST_CUDA(cudaMemset(ws.counters, 0xFF, ws.counter_count * sizeof(unsigned)));
    const workspace_size one_more{ws.partial_floats, ws.counter_count + 1};
    REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::reserve_workspace(ws, one_more, own)));
    FP4FUSE_TEST_CUDA(cudaStreamSynchronize(own));
    std::vector<unsigned> regrown(one_more.counter_count, 1u);
    FP4FUSE_TEST_CUDA(cudaMemcpy(regrown.data(), ws.counters, regrown.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(std::all_of(regrown.begin(), regrown.end(), [](unsigned c) { return c == 0u; }));
    // Large enough already: no CUDA call, the same buffers.
    float* const partials = ws.partials;
    REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::reserve_workspace(ws, workspace_size{1 << 10, 8}, own)));
    CHECK(ws.partials == partials);
    FP4FUSE_TEST_CUDA(cudaFree(ws.partials));
    FP4FUSE_TEST_CUDA(cudaFree(ws.counters));
    FP4FUSE_TEST_CUDA(cudaStreamDestroy(captured));
    FP4FUSE_TEST_CUDA(cudaStreamDestroy(own));
  }
}

// Last in the file: it resets the device.
TEST_CASE("workspace [gpu]: the kept workspace and unit counter do not outlive cudaDeviceReset", "[gpu][gemm][workspace]") {
  // The kept workspaces are keyed by (device, stream id). A stream id is unique for the life of
  // the program, the default stream's in the context cudaDeviceReset leaves behind included
  // (measured: this case passes), so a launch after a reset gets a new workspace and counter,
  // never the buffers the reset freed.
  using fp4fuse::gemm::sm90::detail::stream_workspace;
  int device = 0;
  FP4FUSE_TEST_CUDA(cudaGetDevice(&device));
  stream_workspace* kept_before = nullptr;
  unsigned* counter_before = nullptr;
  REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::unit_counter_for(device, nullptr, &counter_before)));
  REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::cached_workspace(device, nullptr, &kept_before)));
  REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::reserve_workspace(kept_before->ws, {1 << 12, 16}, nullptr)));
  unsigned long long stream_before = 0, stream_after = 0;
  FP4FUSE_TEST_CUDA(cudaStreamGetId(nullptr, &stream_before));
  FP4FUSE_TEST_CUDA(cudaDeviceReset());
  FP4FUSE_TEST_CUDA(cudaStreamGetId(nullptr, &stream_after));
  INFO("default stream id " << stream_before << " -> " << stream_after);
  CHECK(stream_after != stream_before);
  stream_workspace* kept_after = nullptr;
  unsigned* counter_after = nullptr;
  REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::cached_workspace(device, nullptr, &kept_after)));
  CHECK(kept_after != kept_before);
  CHECK(kept_after->ws.partials == nullptr);  // a new, empty workspace
  CHECK(kept_after->ws.counter_count == 0u);
  // counter_after is not compared with counter_before: the new context may hand out the same address.
  REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::unit_counter_for(device, nullptr, &counter_after)));
  // The new counter is live memory of the new context, and zero.
  unsigned value = 1u;
  FP4FUSE_TEST_CUDA(cudaMemcpy(&value, counter_after, sizeof value, cudaMemcpyDeviceToHost));
  CHECK(value == 0u);
  REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::reserve_workspace(kept_after->ws, {1 << 12, 16}, nullptr)));
  std::vector<unsigned> counters(16, 1u);
  FP4FUSE_TEST_CUDA(cudaMemcpy(counters.data(), kept_after->ws.counters, counters.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(std::all_of(counters.begin(), counters.end(), [](unsigned c) { return c == 0u; }));
}
