// The grouped MoE L1 (include/fp4fuse/gemm/grouped.cuh): bit-identical to the dense sm_90a kernel run
// expert by expert with the same tile plan (packed rows, and each expert's scale block against
// the dense kernel's whole scale tensor, padding included), every other scale byte 0x00, packed
// rows beyond the routed ones untouched, sampled rows against the float64 reference; experts with
// 0, 1, 15, 127, 128, 129 rows, all rows in one expert, uniform and skewed routing, both models'
// shapes, both expert start conventions, bias and per-expert global scales, every grouped plan; a
// CUDA graph captured once and replayed with other counts; the unit counter of the ping-pong and
// 192 x 128 kernels (the caller's, left zero; refused where a workspace has none); the BF16 flows
// against the dense kernel; argument validation on the host (the planner, the schedule and the swap-AB chunks:
// tests/gemm/sm90/).
#include <algorithm>
#include <tuple>
#include <utility>

#include "../../examples/l1_gemm/moe_data.cuh"
#include <fp4fuse/gemm/grouped.cuh>
#include "../../examples/l1_gemm/moe_reference.hpp"
#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;
using fp4fuse::gemm::sm90::grouped_plan;
using experimental = fp4fuse::gemm::sm90::experimental_kernels;  // compiles every kernel the forced plans name (swap-AB included)
using fp4fuse::scale_layout::expert_start::offset_bound;
using fp4fuse::scale_layout::expert_start::padded_prefix_sum;
namespace moe = l1_gemm::moe;
namespace gmoe = fp4fuse::gemm::moe;

namespace {
/// Runs `call` while `stream` is being captured in `mode`, checks that the capture is still active
/// after it, and ends the capture (the graph is discarded).
template <class Call>
void inside_capture(cudaStream_t stream, cudaStreamCaptureMode mode, const Call& call) {
  FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(stream, mode));
  call();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FP4FUSE_TEST_CUDA(cudaStreamIsCapturing(stream, &capture));
  CHECK(capture == cudaStreamCaptureStatusActive);
  cudaGraph_t graph = nullptr;
  FP4FUSE_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  FP4FUSE_TEST_CUDA(cudaGraphDestroy(graph));
}

/// Runs `graph` once on `stream`, waits for it, and destroys it (and its executable).
void run_once(cudaGraph_t graph, cudaStream_t stream) {
  cudaGraphExec_t exec = nullptr;
  FP4FUSE_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  FP4FUSE_TEST_CUDA(cudaGraphLaunch(exec, stream));
  FP4FUSE_TEST_CUDA(cudaStreamSynchronize(stream));
  FP4FUSE_TEST_CUDA(cudaGraphExecDestroy(exec));
  FP4FUSE_TEST_CUDA(cudaGraphDestroy(graph));
}
}  // namespace

__global__ void no_work() {}

// First in the file: in a whole run the process's first GPU probe happens inside the capture,
// with an error of the caller's pending (a launch of 2048 threads a block), which the probe must
// neither take for its own nor clear. Which code the runtime gives that launch is its business
// (CUDA 13.0 on an H200 answers cudaErrorInvalidValue, not cudaErrorInvalidConfiguration): the
// test keeps whatever is pending and asks for the same code after the probe.
TEST_CASE("MoE L1 [gpu]: the GPU probe runs outside a capture under way, leaving it and a pending error intact", "[gpu][gemm][moe]") {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    WARN("no CUDA device: the probe is not exercised");
    return;
  }
  int device = 0, major = 0, minor = 0;
  FP4FUSE_TEST_CUDA(cudaGetDevice(&device));
  FP4FUSE_TEST_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FP4FUSE_TEST_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  cudaStream_t stream = nullptr, other = nullptr;
  FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  for (const cudaStreamCaptureMode mode : {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal}) {
    INFO("capture mode " << static_cast<int>(mode));
    bool here = false;
    inside_capture(stream, mode, [&] {
      no_work<<<1, 2048, 0, other>>>();  // another stream, not captured: refused at once, its error pending
      const cudaError_t pending = cudaPeekAtLastError();
      CHECK(pending != cudaSuccess);
      here = fp4fuse::gemm::detail::wgmma_runs_here();
      CHECK(cudaGetLastError() == pending);
      CHECK(cudaGetLastError() == cudaSuccess);  // and cudaGetLastError cleared it: not sticky
    });
    CHECK(here == (major == 9 && minor == 0));  // this binary has an sm_90a image
  }
  FP4FUSE_TEST_CUDA(cudaStreamDestroy(other));
  FP4FUSE_TEST_CUDA(cudaStreamDestroy(stream));
}

TEST_CASE("MoE L1 [gpu]: a captured launch's unit counter is the graph's own, made zero without breaking the capture", "[gpu][gemm][moe]") {
  if (!sm90_engine_here(fp4fuse::gemm::detail::wgmma_runs_here(), "the grouped unit counter is not exercised")) return;
  int device = 0;
  FP4FUSE_TEST_CUDA(cudaGetDevice(&device));
  const auto value_of = [](const unsigned* counter) {
    unsigned value = 1;
    FP4FUSE_TEST_CUDA(cudaMemcpy(&value, counter, sizeof value, cudaMemcpyDeviceToHost));
    return value;
  };
  for (const cudaStreamCaptureMode mode : {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal}) {
    INFO("capture mode " << static_cast<int>(mode));
    cudaStream_t stream = nullptr;  // a new stream: no counter kept for it yet
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned* captured = nullptr;
    fp4fuse::result r;
    inside_capture(stream, mode, [&] { r = fp4fuse::gemm::sm90::detail::unit_counter_for(device, stream, &captured); });
    INFO(r.message());
    REQUIRE(static_cast<bool>(r));
    REQUIRE(captured != nullptr);
    CHECK(value_of(captured) == 0u);
    // Outside the capture: the counter kept for the stream, the same on every call, not the graph's.
    unsigned *kept = nullptr, *again = nullptr;
    REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::unit_counter_for(device, stream, &kept)));
    REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::detail::unit_counter_for(device, stream, &again)));
    CHECK(kept == again);
    CHECK(kept != captured);
    CHECK(value_of(kept) == 0u);
    FP4FUSE_TEST_CUDA(cudaStreamDestroy(stream));
  }
}

TEST_CASE("MoE L1: invalid arguments are refused before any CUDA call, naming the argument", "[gemm][moe]") {
  const auto fake = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const std::int32_t* offsets = static_cast<const std::int32_t*>(fake(0x800000));
  const gmoe::inputs good{{static_cast<const __nv_bfloat16*>(fake(0x100000)), 64, 256, 256}, static_cast<const __nv_bfloat16*>(fake(0x200000)),
                         nullptr};
  const gmoe::grouped_output<offset_bound> out{static_cast<std::uint8_t*>(fake(0x300000)), 40, static_cast<std::uint8_t*>(fake(0x400000)),
                                              {64, 5, 8, offsets}};
  const gmoe::global_scales S = fp4fuse::global_scale::per_tensor{static_cast<const float*>(fake(0x500000))};
  const auto refused = [&](const gmoe::inputs& in, const gmoe::grouped_output<offset_bound>& o, const gmoe::global_scales& s, fp4fuse::status want,
                           const char* names) {
    const fp4fuse::result r = gmoe::run_fused(in, o, s, fp4fuse::activation::swiglu{});
    INFO(r.message());
    CHECK(r.code == want);
    CHECK(std::string(r.message()).find(names) != std::string::npos);
  };
  gmoe::inputs in = good;
  in.x.data = nullptr;
  refused(in, out, S, fp4fuse::status::null_pointer, "in.x.data is null");
  in = good;
  in.x.cols = 250;
  in.x.ld = 250;
  refused(in, out, S, fp4fuse::status::not_multiple_of_block, "in.x.cols = 250 must be a multiple of 8");
  in = good;
  in.x.ld = 264;
  refused(in, out, S, fp4fuse::status::bad_leading_dimension, "in.x.ld = 264 must equal in.x.cols");
  in = good;
  in.w = static_cast<const __nv_bfloat16*>(fake(0x200008));
  refused(in, out, S, fp4fuse::status::misaligned_pointer, "in.w");
  in = good;
  in.bias = static_cast<const float*>(fake(0x600004));
  refused(in, out, S, fp4fuse::status::misaligned_pointer, "in.bias");
  auto o = out;
  o.layout.rows = 65;
  refused(good, o, S, fp4fuse::status::bad_shape, "out.layout.rows = 65 must equal in.x.rows = 64");
  o = out;
  o.layout.expert_offsets = nullptr;
  refused(good, o, S, fp4fuse::status::null_pointer, "out.layout.expert_offsets is null");
  o = out;
  o.layout.experts = 0;
  refused(good, o, S, fp4fuse::status::bad_shape, "out.layout.experts = 0 must be in [1, 1024]");
  refused(good, out, fp4fuse::global_scale::per_tensor{nullptr}, fp4fuse::status::null_pointer, "S (NVFP4 global encode scales");
  refused(good, out, fp4fuse::global_scale::per_group{nullptr}, fp4fuse::status::null_pointer, "S (NVFP4 global encode scales");
  o = out;
  o.ld_packed = 36;
  refused(good, o, S, fp4fuse::status::bad_leading_dimension, "out.ld_packed = 36");
  const grouped_plan no_kernel{64, 64, 1, false};
  const fp4fuse::result forced = gmoe::run_fused(good, out, S, fp4fuse::activation::swiglu{}, nullptr, &no_kernel);
  INFO(forced.message());
  CHECK(forced.code == fp4fuse::status::bad_shape);
  CHECK(std::string(forced.message()).find("the forced plan names no kernel") != std::string::npos);
  // A plan that takes its units at run time, with a workspace whose counter is not 4-byte aligned
  // (unsigned atomics): refused before any CUDA call.
  {
    const grouped_plan taker{128, 128, 2, true, true};
    const fp4fuse::gemm::sm90::workspace odd_counter{nullptr, static_cast<unsigned*>(fake(0x900002)), 0, 1};
    const fp4fuse::result r = gmoe::run_fused(good, out, S, fp4fuse::activation::swiglu{}, nullptr, &taker, &odd_counter);
    INFO(r.message());
    CHECK(r.code == fp4fuse::status::misaligned_pointer);
    CHECK(std::string(r.message()).find("workspace.counters (") != std::string::npos);
  }
  // A swap-AB plan runs only where the call compiles the experimental kernels: refused before any
  // CUDA call (bad_shape, not no_device, on a machine without a GPU), nothing written.
  for (const grouped_plan& swap : {grouped_plan{192, 128, 2, false, true, true}, grouped_plan{192, 128, 1, false, false, true}}) {
    const fp4fuse::result not_compiled = gmoe::run_fused(good, out, S, fp4fuse::activation::swiglu{}, nullptr, &swap);
    INFO(not_compiled.message());
    CHECK(not_compiled.code == fp4fuse::status::bad_shape);
    CHECK(std::string(not_compiled.message())
              .find("fp4fuse::gemm::moe::run_fused: the forced plan names an experimental swap-AB kernel, which this call does not compile: "
                    "run_fused<Intermediate, fp4fuse::gemm::sm90::experimental_kernels> does") != std::string::npos);
  }
  // So does a plan no plan_grouped chooses (only the planned kernels are compiled by default), in
  // each flow, naming the call that compiles it.
  const grouped_plan unplanned{128, 256, 1, false};
  const fp4fuse::matrix_view<__nv_bfloat16> gu_view{static_cast<__nv_bfloat16*>(fake(0x700000)), 64, 160, 160};
  const fp4fuse::matrix_view<__nv_bfloat16> h_view{static_cast<__nv_bfloat16*>(fake(0x700000)), 64, 80, 80};
  for (const auto& [r, call] :
       {std::pair{gmoe::run_fused(good, out, S, fp4fuse::activation::swiglu{}, nullptr, &unplanned),
                  "run_fused: the forced plan names a kernel that no plan chooses, which this call does not compile: "
                  "run_fused<Intermediate, fp4fuse::gemm::sm90::experimental_kernels> does"},
        std::pair{gmoe::run_bf16(good, gu_view, 8, offsets, nullptr, &unplanned),
                  "run_bf16: the forced plan names a kernel that no plan chooses, which this call does not compile: "
                  "run_bf16<fp4fuse::gemm::sm90::experimental_kernels> does"},
        std::pair{gmoe::run_swiglu_bf16(good, h_view, fp4fuse::activation::swiglu{}, 8, offsets, nullptr, &unplanned),
                  "run_swiglu_bf16: the forced plan names a kernel that no plan chooses, which this call does not compile: "
                  "run_swiglu_bf16<fp4fuse::gemm::sm90::experimental_kernels> does"}}) {
    INFO(r.message());
    CHECK(r.code == fp4fuse::status::bad_shape);
    CHECK(std::string(r.message()).find(call) != std::string::npos);
  }
  // sm90::launch_grouped (public; the flows call it after their checks) refuses a plan the same
  // way, before any CUDA call.
  {
    const gmoe::epilogue::grouped<gmoe::epilogue::store_bf16, false> epi{{gu_view, nullptr}, 160};
    const auto launch = [&](const grouped_plan& plan) {
      return fp4fuse::gemm::sm90::launch_grouped(good.x.data, good.w, 64, 160, 256, 8, offsets, epi, nullptr, &plan);
    };
    for (const auto& [r, words] : {std::pair{launch(no_kernel), "launch_grouped: the forced plan names no kernel of the grouped GEMM"},
                                   std::pair{launch(unplanned), "launch_grouped: the forced plan names a kernel that no plan chooses, which "
                                                                "this launch does not compile: launch_grouped<fp4fuse::gemm::sm90::experimental_kernels> does"},
                                   std::pair{launch(grouped_plan{192, 128, 1, false, false, true}),
                                             "launch_grouped: the swap-AB kernel takes the fused NVFP4 epilogue only"}}) {
      INFO(r.message());
      CHECK(r.code == fp4fuse::status::bad_shape);
      CHECK(std::string(r.message()).find(words) != std::string::npos);
    }
    // Its own bounds, which the moe:: calls check before it: the group count (the schedule's
    // shared-memory scan holds max_groups), null and misaligned pointers, the shape, W's 32-bit
    // row indexing, the unit count.
    const auto direct = [&](const __nv_bfloat16* x, int rows, int N, int K, int groups, const std::int32_t* offs) {
      return fp4fuse::gemm::sm90::launch_grouped(x, good.w, rows, N, K, groups, offs, epi, nullptr);
    };
    for (const auto& [r, code, words] :
         {std::tuple{direct(good.x.data, 64, 160, 256, 1025, offsets), fp4fuse::status::bad_shape, "groups = 1025 must be in [1, 1024]"},
          std::tuple{direct(good.x.data, 64, 160, 256, 0, offsets), fp4fuse::status::bad_shape, "groups = 0 must be in [1, 1024]"},
          std::tuple{direct(good.x.data, 64, 160, 256, 8, nullptr), fp4fuse::status::null_pointer, "offsets is null"},
          std::tuple{direct(nullptr, 64, 160, 256, 8, offsets), fp4fuse::status::null_pointer, "x is null"},
          std::tuple{direct(good.x.data, 64, 150, 256, 8, offsets), fp4fuse::status::bad_shape, "rows = 64, N = 150, K = 256"},
          std::tuple{direct(good.x.data, 64, 160, 250, 8, offsets), fp4fuse::status::bad_shape, "rows = 64, N = 160, K = 250"},
          std::tuple{direct(good.x.data, -1, 160, 256, 8, offsets), fp4fuse::status::bad_shape, "rows = -1"},
          std::tuple{direct(good.x.data, 64, 1 << 22, 256, 1024, offsets), fp4fuse::status::bad_shape,
                     "groups * N = 4294967296 exceeds 32-bit W row indexing"},
          // TMA's 16-byte base, the offsets' int32 reads, the schedule's int unit count: a direct
          // call faulted or overflowed on each before launch_grouped checked them itself.
          std::tuple{direct(good.x.data + 1, 64, 160, 256, 8, offsets), fp4fuse::status::misaligned_pointer, "x ("},
          std::tuple{direct(good.x.data, 64, 160, 256, 8, reinterpret_cast<const std::int32_t*>(reinterpret_cast<const char*>(offsets) + 2)),
                     fp4fuse::status::misaligned_pointer, "offsets ("},
          std::tuple{direct(good.x.data, (1 << 30) - 64, 8192, 256, 8, offsets), fp4fuse::status::bad_shape,
                     "rows = 1073741760 with groups = 8 and N = 8192 give more work units than 32-bit indexing allows"}}) {
      INFO(r.message());
      CHECK(r.code == code);
      CHECK(std::string(r.message()).find(std::string("fp4fuse::gemm::sm90::launch_grouped: ") + words) != std::string::npos);
    }
    // 0 rows: ok, no CUDA call (the BF16 binding has no host work); a plan it cannot run is still
    // refused.
    CHECK(static_cast<bool>(direct(good.x.data, 0, 160, 256, 8, offsets)));
    const fp4fuse::result no_rows_no_kernel =
        fp4fuse::gemm::sm90::launch_grouped(good.x.data, good.w, 0, 160, 256, 8, offsets, epi, nullptr, &no_kernel);
    INFO(no_rows_no_kernel.message());
    CHECK(no_rows_no_kernel.code == fp4fuse::status::bad_shape);
  }
  // The BF16 flows refuse a swap-AB plan whichever kernels they compile (it takes the fused epilogue only).
  const grouped_plan swap_plan{192, 128, 1, false, false, true};
  for (const fp4fuse::result& r : {gmoe::run_bf16(good, gu_view, 8, offsets, nullptr, &swap_plan),
                                   gmoe::run_bf16<experimental>(good, gu_view, 8, offsets, nullptr, &swap_plan),
                                   gmoe::run_swiglu_bf16(good, h_view, fp4fuse::activation::swiglu{}, 8, offsets, nullptr, &swap_plan),
                                   gmoe::run_swiglu_bf16<experimental>(good, h_view, fp4fuse::activation::swiglu{}, 8, offsets, nullptr, &swap_plan)}) {
    INFO(r.message());
    CHECK(r.code == fp4fuse::status::bad_shape);
    CHECK(std::string(r.message()).find("the swap-AB kernel takes the fused NVFP4 epilogue only") != std::string::npos);
  }

  // The BF16 flows check the same things, naming their own arguments.
  const fp4fuse::result null_out = gmoe::run_bf16(good, fp4fuse::matrix_view<__nv_bfloat16>{nullptr, 64, 160, 160}, 8, offsets);
  INFO(null_out.message());
  CHECK(null_out.code == fp4fuse::status::null_pointer);
  CHECK(std::string(null_out.message()).find("gate_up.data is null") != std::string::npos);
  const fp4fuse::matrix_view<__nv_bfloat16> gate_up{static_cast<__nv_bfloat16*>(fake(0x700000)), 64, 160, 160};
  const fp4fuse::result no_experts = gmoe::run_bf16(good, gate_up, 0, offsets);
  INFO(no_experts.message());
  CHECK(no_experts.code == fp4fuse::status::bad_shape);
  CHECK(std::string(no_experts.message()).find("fp4fuse::gemm::moe::run_bf16: experts = 0 must be in [1, 1024]") != std::string::npos);
  const fp4fuse::result no_offsets =
      gmoe::run_swiglu_bf16(good, fp4fuse::matrix_view<__nv_bfloat16>{gate_up.data, 64, 80, 80}, fp4fuse::activation::swiglu{}, 8, nullptr);
  INFO(no_offsets.message());
  CHECK(no_offsets.code == fp4fuse::status::null_pointer);
  CHECK(std::string(no_offsets.message()).find("expert_offsets is null") != std::string::npos);
}

namespace {

/// One grouped problem on the device: inputs from moe_data.cuh's hash, `slack` rows of capacity
/// beyond the routed ones (their packed bytes must stay untouched).
template <class Start>
struct grouped_problem {
  int E, H, I, N, rows, capacity;
  std::vector<std::int32_t> counts, offsets;
  moe::values v;
  bool with_bias, per_expert_S;
  device_buffer x, w, bias, d_offsets, S, packed, scales;
  std::vector<float> S_host;

  grouped_problem(const std::vector<std::int32_t>& counts_, int H_, int I_, int slack, bool bias_, bool per_expert, std::uint64_t seed)
      : E(static_cast<int>(counts_.size())), H(H_), I(I_), N(2 * I_), rows(0), capacity(0), counts(counts_),
        offsets(moe::offsets_of(counts_)), v{seed, H_}, with_bias(bias_), per_expert_S(per_expert),
        x((std::size_t(offsets.back()) + slack) * H_ * 2), w(std::size_t(E) * 2 * I_ * H_ * 2), bias(std::size_t(E) * 2 * I_ * 4),
        d_offsets(offsets.size() * 4), S(std::size_t(E) * 4), packed((std::size_t(offsets.back()) + slack) * I_ / 2),
        scales(static_cast<std::size_t>(layout_for(offsets.back() + slack).size_bytes())) {
    rows = offsets.back();
    capacity = rows + slack;
    REQUIRE(moe::fill_device(x.as<void>(), std::uint64_t(capacity) * H, v, 0) == cudaSuccess);
    REQUIRE(moe::fill_device(w.as<void>(), std::uint64_t(E) * N * H, v, 1) == cudaSuccess);
    REQUIRE(moe::fill_device(bias.as<void>(), std::uint64_t(E) * N, v, 2) == cudaSuccess);
    d_offsets.upload(offsets.data(), offsets.size() * 4);
    // Global scales: per expert, distinct fixed values (S for amax 2 + e / 4), so that a kernel
    // reading another expert's S gives other bytes; else one S = 448 (amax 6) for all. The test
    // compares with the dense kernel under the same S, so S need not match the data's amax.
    for (int e = 0; e < E; ++e) S_host.push_back(per_expert ? fp4fuse::nvfp4_global_encode_scale(2.0f + 0.25f * e) : 448.0f);
    S.upload(S_host.data(), S_host.size() * 4);
  }
  gmoe::grouped_layout<Start> layout_for(int cap) const { return {cap, I / 16, E, nullptr}; }
  gmoe::inputs inputs() const { return {{x.as<__nv_bfloat16>(), capacity, H, H}, w.as<__nv_bfloat16>(), with_bias ? bias.as<float>() : nullptr}; }
  gmoe::grouped_output<Start> output() const {
    return {packed.as<std::uint8_t>(), I / 2, scales.as<std::uint8_t>(), {capacity, I / 16, E, d_offsets.as<std::int32_t>()}};
  }
  gmoe::global_scales global() const {
    return per_expert_S ? gmoe::global_scales(fp4fuse::global_scale::per_group{S.as<float>()})
                        : gmoe::global_scales(fp4fuse::global_scale::per_tensor{S.as<float>()});
  }
  /// Sets other counts (same experts, total at most the capacity) in the device offsets.
  void reroute(const std::vector<std::int32_t>& new_counts) {
    counts = new_counts;
    offsets = moe::offsets_of(new_counts);
    REQUIRE(offsets.back() <= capacity);
    rows = offsets.back();
    d_offsets.upload(offsets.data(), offsets.size() * 4);
  }
};

/// The dense plan with the grouped plan's tiles and schedule (no K split). The dense GEMM has no
/// 192 x 128 tiles: against those, its cooperative 128 x 128 ones, whose accumulators are the same
/// chain of wgmma per element (the bits must not depend on the tile).
fp4fuse::gemm::sm90::launch_plan dense_plan(const grouped_plan& p) {
  if (p.block_m == 192 || p.swap_ab) return {128, 1, 0, 1, 0, 2, 128};  // and the swap-AB kernel's (its tokens as wgmma's N)
  fp4fuse::gemm::sm90::launch_plan d{p.block_n, 1, 0, p.cluster, p.pingpong ? 1 : 0, 2, p.block_m};
  return d;
}

/// Runs the dense sm_90a kernel on expert e's rows with the grouped plan's tiles and the same
/// epilogue as the grouped one binds, and returns its packed rows and its whole scale tensor.
template <class Start, class Activation>
void dense_expert(const grouped_problem<Start>& p, int e, const grouped_plan& plan, const Activation& act, std::vector<unsigned char>& packed,
                  std::vector<unsigned char>& scales) {
  const int count = p.counts[static_cast<std::size_t>(e)];
  const fp4fuse::gemm::moe::layout layout{count, p.I / 16};
  device_buffer d_packed(std::size_t(count) * p.I / 2), d_scales(static_cast<std::size_t>(layout.size_bytes()));
  const fp4fuse::quantized_matrix<fp4fuse::gemm::moe::format, fp4fuse::gemm::moe::layout> out{d_packed.as<std::uint8_t>(), p.I / 2, d_scales.as<std::uint8_t>(), layout};
  const float* S = p.S.template as<float>() + (p.per_expert_S ? e : 0);
  const fp4fuse::gemm::swiglu_nvfp4<Activation> epi{out, S, act};
  const __nv_bfloat16* x_e = p.x.template as<__nv_bfloat16>() + std::size_t(p.offsets[static_cast<std::size_t>(e)]) * p.H;
  const __nv_bfloat16* w_e = p.w.template as<__nv_bfloat16>() + std::size_t(e) * p.N * p.H;
  const fp4fuse::gemm::sm90::launch_plan dp = dense_plan(plan);
  fp4fuse::result r;
  if (p.with_bias) {
    const fp4fuse::gemm::swiglu_nvfp4<Activation, fp4fuse::intermediate::fp32, fp4fuse::recipe::te_exact, fp4fuse::column_bias> biased{
        out, S, act, {p.bias.template as<float>() + std::size_t(e) * p.N, p.N}};
    r = fp4fuse::gemm::gemm(x_e, w_e, count, p.N, p.H, biased, fp4fuse::gemm::engine::wgmma, nullptr, &dp);
  } else {
    r = fp4fuse::gemm::gemm(x_e, w_e, count, p.N, p.H, epi, fp4fuse::gemm::engine::wgmma, nullptr, &dp);
  }
  INFO(r.message());
  REQUIRE(static_cast<bool>(r));
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  packed = d_packed.download();
  scales = d_scales.download();
}

/// The grouped fused output of `p` (already run) against the dense kernel expert by expert, the
/// grouped layout's other bytes, the untouched slack rows and the float64 reference on sampled rows.
template <class Start, class Activation>
void check_against_dense(const grouped_problem<Start>& p, const grouped_plan& plan, const Activation& act) {
  const auto got_packed = p.packed.download(), got_scales = p.scales.download();
  gmoe::grouped_layout<Start> layout = p.layout_for(p.capacity);
  layout.expert_offsets = p.offsets.data();  // the host copy
  std::size_t expert_mismatches = 0;
  for (int e = 0; e < p.E; ++e) {
    const int count = p.counts[static_cast<std::size_t>(e)];
    if (count == 0) continue;
    std::vector<unsigned char> packed, scales;
    dense_expert(p, e, plan, act, packed, scales);
    const auto block = layout.expert(e);
    const bool same_packed = std::equal(packed.begin(), packed.end(), got_packed.begin() + std::ptrdiff_t(p.offsets[static_cast<std::size_t>(e)]) * (p.I / 2));
    const bool same_scales = std::equal(scales.begin(), scales.end(), got_scales.begin() + std::ptrdiff_t(block.start_row) * layout.padded_cols());
    if (!same_packed || !same_scales) {
      if (expert_mismatches < 3) UNSCOPED_INFO("expert " << e << " (" << count << " rows): packed " << same_packed << " scales " << same_scales);
      ++expert_mismatches;
    }
  }
  CHECK(expert_mismatches == 0);
  CHECK(moe::padding_is_zero(got_scales, layout));
  // Packed rows beyond the routed ones: never written.
  CHECK(std::all_of(got_packed.begin() + std::ptrdiff_t(p.rows) * (p.I / 2), got_packed.end(), [](unsigned char c) { return c == poison; }));
  CHECK(p.packed.guard_intact());
  CHECK(p.scales.guard_intact());
  // The float64 reference: the first and last row of a few experts.
  const moe::reference ref{p.v, p.H, p.I, p.with_bias};
  moe::comparison cmp;
  int sampled = 0;
  for (int e = 0; e < p.E && sampled < 6; ++e) {
    if (p.counts[static_cast<std::size_t>(e)] == 0) continue;
    for (int r : {p.offsets[static_cast<std::size_t>(e)], p.offsets[static_cast<std::size_t>(e) + 1] - 1}) {
      ref.compare_row(cmp, got_packed, got_scales, layout, r, e, act, p.S_host[static_cast<std::size_t>(p.per_expert_S ? e : 0)]);
    }
    ++sampled;
  }
  INFO("float64 reference: " << cmp.code_diffs << " of " << cmp.codes << " codes differ; rel. RMS " << cmp.rel_rms() << " (reference "
                             << cmp.reference_rel_rms() << ")");
  CHECK(cmp.diff_fraction() < 0.01);
  CHECK(cmp.rel_rms() <= cmp.reference_rel_rms() * 1.05 + 1e-4);
}

template <class Start, class Activation>
void check_fused(const std::vector<std::int32_t>& counts, int H, int I, bool bias, bool per_expert, const grouped_plan& plan,
                 const Activation& act, const char* what) {
  INFO(what << ": E=" << counts.size() << " H=" << H << " I=" << I << (bias ? " bias" : "") << (per_expert ? " per-expert S" : "")
            << " plan " << plan.block_m << "x" << plan.block_n << " cluster " << plan.cluster << (plan.along_n ? " along N" : "")
            << (plan.pingpong ? " ping-pong" : "") << (plan.swap_ab ? " swap-AB" : ""));
  grouped_problem<Start> p(counts, H, I, 7, bias, per_expert, rng(what)());
  const fp4fuse::result r = gmoe::run_fused<fp4fuse::intermediate::fp32, experimental>(p.inputs(), p.output(), p.global(), act, nullptr, &plan);
  INFO(r.message());
  REQUIRE(static_cast<bool>(r));
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  check_against_dense(p, plan, act);
}

/// True where the grouped kernels run; fails on an sm_90 device without the sm_90a image, warns
/// elsewhere (sm90_engine_here).
bool grouped_runs_here() { return sm90_engine_here(fp4fuse::gemm::detail::wgmma_runs_here(), "the grouped kernels are not exercised"); }

const grouped_plan all_plans[] = {{64, 256, 1, false}, {64, 256, 2, false}, {64, 128, 1, false}, {64, 128, 2, false}, {128, 256, 1, false},
                                  {128, 256, 2, false}, {128, 128, 1, false}, {128, 128, 2, false}, {128, 128, 1, true}, {128, 128, 2, true},
                                  {128, 128, 2, true, true}, {192, 128, 2, false, true}, {192, 128, 1, false, false, true},
                                  {192, 128, 2, false, true, true}};

}  // namespace

TEST_CASE("MoE L1: a valid fused call on a machine without a GPU reports no_device, as the library launchers do", "[gemm][moe]") {
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  (void)cudaGetLastError();
  if (gpu) {
    SUCCEED("a GPU is present: the [gpu] cases cover valid calls");
    return;
  }
  using offset_bound = fp4fuse::scale_layout::expert_start::offset_bound;
  const auto fake = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const gmoe::inputs in{{static_cast<const __nv_bfloat16*>(fake(0x100000)), 64, 256, 256}, static_cast<const __nv_bfloat16*>(fake(0x200000)),
                       nullptr};
  const gmoe::grouped_output<offset_bound> out{static_cast<std::uint8_t*>(fake(0x300000)), 40, static_cast<std::uint8_t*>(fake(0x400000)),
                                              {64, 5, 8, static_cast<const std::int32_t*>(fake(0x800000))}};
  for (const gmoe::global_scales S : {gmoe::global_scales(fp4fuse::global_scale::per_tensor{static_cast<const float*>(fake(0x500000))}),
                                     gmoe::global_scales(fp4fuse::global_scale::per_group{static_cast<const float*>(fake(0x500000))})}) {
    const fp4fuse::result r = gmoe::run_fused(in, out, S, fp4fuse::activation::swiglu{});
    INFO(r.message());
    CHECK(r.code == fp4fuse::status::no_device);
    CHECK(std::string(r.message()).find("no usable CUDA device") != std::string::npos);
  }
  // A plan no plan_grouped chooses passes every check of a call that compiles it (and reaches the
  // device query).
  const gmoe::global_scales S{fp4fuse::global_scale::per_tensor{static_cast<const float*>(fake(0x500000))}};
  for (const grouped_plan& plan : all_plans) {
    INFO("plan " << plan.block_m << "x" << plan.block_n << " cluster " << plan.cluster << (plan.pingpong ? " ping-pong" : "")
                 << (plan.swap_ab ? " swap-AB" : ""));
    const fp4fuse::result r = gmoe::run_fused<fp4fuse::intermediate::fp32, experimental>(in, out, S, fp4fuse::activation::swiglu{}, nullptr, &plan);
    CHECK(r.code == fp4fuse::status::no_device);
  }
}

TEST_CASE("MoE L1 [gpu]: fused grouped output bit-identical to the dense kernel expert by expert, every plan", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  // Edge counts: empty experts, 1, 15, 127, 128, 129 rows, and more than one tile pair; 64, 65,
  // 192 and 193 about the 192-row tiles' fragments (the second or third wholly beyond the rows).
  const std::vector<std::int32_t> edges{0, 1, 15, 0, 127, 128, 129, 0, 300, 2, 64, 65, 192, 193};
  for (const grouped_plan& plan : all_plans) {
    check_fused<offset_bound>(edges, 256, 80, false, false, plan, fp4fuse::activation::swiglu{}, "edge counts, offset bound");
    check_fused<padded_prefix_sum>(edges, 200, 208, true, true, plan, fp4fuse::activation::swiglu_clamped{}, "edge counts, prefix sums, bias");
  }
}

namespace {

/// run_fused's kernel without the launch's memset, into a poisoned scale tensor: the launch is
/// captured into a graph, which must hold one memset of the whole scale tensor and one kernel after
/// it; the memset node is removed and the graph run. Each expert's band (its scales and in-band
/// padding, round_up(count, 128) rows) must equal the dense kernel's scale tensor, and every other
/// byte (gaps, tail, the bands of empty experts) keep the poison. The kernel writes exactly the
/// experts' bands; the memset is what zeroes the rest.
template <class Start>
void check_bands_without_memset(const std::vector<std::int32_t>& counts, const grouped_plan& plan, const char* what) {
  INFO(what << ": plan " << plan.block_m << "x" << plan.block_n << " cluster " << plan.cluster << (plan.along_n ? " along N" : "")
            << (plan.pingpong ? " ping-pong" : "") << (plan.swap_ab ? " swap-AB" : ""));
  grouped_problem<Start> p(counts, 128, 144, 5, false, true, rng(what)());
  using nvfp4 = gmoe::epilogue::swiglu_nvfp4<Start, fp4fuse::activation::swiglu>;
  const nvfp4 e{p.output(), p.global(), fp4fuse::activation::swiglu{}, nullptr};
  cudaStream_t stream = nullptr;
  FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const fp4fuse::result r = gmoe::detail::launch<experimental>(p.inputs(), p.N, p.E, p.d_offsets.template as<std::int32_t>(),
                                                gmoe::epilogue::grouped<nvfp4, false>{e, p.N}, stream, &plan);
  FP4FUSE_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  INFO(r.message());
  REQUIRE(static_cast<bool>(r));
  std::size_t count = 0;
  FP4FUSE_TEST_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  FP4FUSE_TEST_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  // The memset node is removed after the walk: removing it first would take the kernel's
  // dependency with it wherever cudaGraphGetNodes lists the memset first.
  int memsets = 0, kernels = 0;
  std::vector<cudaGraphNode_t> removed;
  for (const cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    FP4FUSE_TEST_CUDA(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      ++kernels;
      std::size_t before = 0;
#if CUDART_VERSION >= 13000
      FP4FUSE_TEST_CUDA(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &before));
#else
      FP4FUSE_TEST_CUDA(cudaGraphNodeGetDependencies(node, nullptr, &before));
#endif
      CHECK(before == 1);  // the memset
    } else if (type == cudaGraphNodeTypeMemset) {
      ++memsets;
      cudaMemsetParams m{};
      FP4FUSE_TEST_CUDA(cudaGraphMemsetNodeGetParams(node, &m));
      CHECK(m.dst == p.scales.template as<void>());
      CHECK(m.value == 0u);
      CHECK(m.width * m.elementSize * m.height == p.scales.bytes());
      removed.push_back(node);
    }
  }
  for (const cudaGraphNode_t node : removed) FP4FUSE_TEST_CUDA(cudaGraphDestroyNode(node));
  CHECK(memsets == 1);
  CHECK(kernels == 1);
  run_once(graph, stream);
  FP4FUSE_TEST_CUDA(cudaStreamDestroy(stream));
  const auto got = p.scales.download();
  gmoe::grouped_layout<Start> layout = p.layout_for(p.capacity);
  layout.expert_offsets = p.offsets.data();
  std::vector<char> band(got.size(), 0);
  std::size_t mismatched_bands = 0;
  for (int ex = 0; ex < p.E; ++ex) {
    if (p.counts[static_cast<std::size_t>(ex)] == 0) continue;
    std::vector<unsigned char> packed, scales;
    dense_expert(p, ex, plan, fp4fuse::activation::swiglu{}, packed, scales);
    const std::size_t begin = static_cast<std::size_t>(layout.expert(ex).start_row * layout.padded_cols());
    REQUIRE(begin + scales.size() <= got.size());
    if (!std::equal(scales.begin(), scales.end(), got.begin() + std::ptrdiff_t(begin))) ++mismatched_bands;
    std::fill(band.begin() + std::ptrdiff_t(begin), band.begin() + std::ptrdiff_t(begin + scales.size()), 1);
  }
  CHECK(mismatched_bands == 0);
  std::size_t written_outside = 0;
  for (std::size_t i = 0; i < got.size(); ++i) written_outside += !band[i] && got[i] != poison;
  CHECK(written_outside == 0);
  CHECK(p.scales.guard_intact());
}

}  // namespace

TEST_CASE("MoE L1 [gpu]: the kernel writes each expert's band, in-band padding included, and nothing else", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  // Counts {128, 5} leave an offset_bound gap after a full band; 1 and 129 rows leave pairs of
  // tiles (clusters) beyond the expert's rows. 300 rows: the second 192-row tile's third consumer
  // holds no row of the expert but rows 320-383 of its band, whose padding it alone writes
  // (warpgroup_beyond_rows, without the epilogue's arithmetic).
  const std::vector<std::int32_t> counts{128, 5, 0, 1, 129, 0, 0, 64, 300, 65, 193};
  for (const grouped_plan& plan : all_plans) {
    check_bands_without_memset<offset_bound>(counts, plan, "bands, offset bound");
    check_bands_without_memset<padded_prefix_sum>(counts, plan, "bands, prefix sums");
  }
}

TEST_CASE("MoE L1 [gpu]: routings and the models' shapes", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  auto g = rng("moe routings");
  const grouped_plan planned = fp4fuse::gemm::sm90::plan_grouped(512, 16);
  // All rows in one expert; uniform and skewed top-k routings.
  check_fused<offset_bound>({0, 0, 700, 0, 0}, 128, 64, false, false, grouped_plan{128, 256, 1, false}, fp4fuse::activation::swiglu{},
                            "all rows in one expert");
  check_fused<padded_prefix_sum>({0, 0, 700, 0, 0}, 128, 64, true, false, grouped_plan{64, 256, 1, false}, fp4fuse::activation::swiglu_clamped{},
                                 "all rows in one expert, 64-row tiles");
  check_fused<offset_bound>(moe::route(300, 16, 4, moe::routing::uniform, g()), 512, 128, false, false, planned, fp4fuse::activation::swiglu{},
                            "uniform top-4 of 16");
  check_fused<offset_bound>(moe::route(300, 16, 4, moe::routing::skewed, g()), 512, 128, false, true, planned, fp4fuse::activation::swiglu{},
                            "skewed top-4 of 16");
  // Fewer routed rows (with the slack, X's rows) than a 64-row tile: X's box stops at X's rows
  // (x_box_rows), the ring's rows beyond are zeroed, and the experts after the first read rows past
  // X's end from their offset on (TMA's fill).
  check_fused<offset_bound>({0, 3, 17, 0, 9}, 256, 80, false, false, grouped_plan{64, 256, 1, false}, fp4fuse::activation::swiglu{},
                            "29 routed rows, 64 x 256 tiles");
  check_fused<padded_prefix_sum>({5, 0, 1, 20}, 2880, 2880, true, true, grouped_plan{64, 128, 1, false}, fp4fuse::activation::swiglu_clamped{},
                                 "26 routed rows of GPT-OSS experts, 64 x 128 tiles");
  // DeepSeek-V3's and GPT-OSS's expert shapes (fewer experts), each with its activation.
  check_fused<offset_bound>(moe::route(40, 6, 2, moe::routing::uniform, g()), 7168, 2048, false, false, grouped_plan{64, 256, 1, false},
                            fp4fuse::activation::swiglu{}, "DeepSeek-V3 experts");
  check_fused<padded_prefix_sum>(moe::route(200, 4, 2, moe::routing::skewed, g()), 2880, 2880, true, true, grouped_plan{128, 256, 1, false},
                                 fp4fuse::activation::swiglu_clamped{}, "GPT-OSS experts");
  check_fused<offset_bound>(moe::route(1500, 4, 2, moe::routing::uniform, g()), 2880, 2880, true, false, grouped_plan{128, 128, 2, true},
                            fp4fuse::activation::swiglu_clamped{}, "GPT-OSS experts, ping-pong");
  // 2I = 5760 is 45 column tiles: the last cluster along N pairs tile 44 with one wholly beyond N.
  check_fused<padded_prefix_sum>(moe::route(1500, 4, 2, moe::routing::skewed, g()), 2880, 2880, true, true,
                                 grouped_plan{128, 128, 2, true, true}, fp4fuse::activation::swiglu_clamped{},
                                 "GPT-OSS experts, ping-pong, clusters along N");
  check_fused<padded_prefix_sum>(moe::route(1500, 4, 2, moe::routing::skewed, g()), 2880, 2880, true, true,
                                 grouped_plan{192, 128, 2, false, true}, fp4fuse::activation::swiglu_clamped{},
                                 "GPT-OSS experts, 192 x 128 tiles, clusters along N");
  check_fused<offset_bound>(moe::route(600, 8, 2, moe::routing::uniform, g()), 7168, 2048, false, false, grouped_plan{192, 128, 2, false, true},
                            fp4fuse::activation::swiglu{}, "DeepSeek-V3 experts, 192 x 128 tiles, clusters along N");
  // More units than clusters: each CTA runs several 192 x 128 units of 1, 2 or 3 fragments in a
  // row, so a consumer that passes its stages runs ahead of the others in the ring.
  std::vector<std::int32_t> mixed(300);
  for (auto& c : mixed) c = static_cast<std::int32_t>(1 + g() % 200);
  check_fused<padded_prefix_sum>(mixed, 256, 128, false, true, grouped_plan{192, 128, 2, false, true}, fp4fuse::activation::swiglu{},
                                 "300 experts of 1-200 rows, 192 x 128 tiles");
}

TEST_CASE("MoE L1 [gpu]: a CUDA graph captured once, replayed with other counts", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  auto g = rng("moe graph");
  const std::vector<std::int32_t> first = moe::route(120, 8, 2, moe::routing::uniform, g());
  // The plan for the capacity; the 192 x 128 tiles, whose X boxes per unit depend on the counts;
  // the ping-pong kernel. The last two take their units from the graph's own counter, made during
  // the capture and left zero by every replay.
  for (const int which : {0, 1, 2}) {
    grouped_problem<offset_bound> p(first, 256, 128, 60, false, false, g());  // capacity = 240 + 60 rows
    const grouped_plan plan = which == 1   ? grouped_plan{192, 128, 2, false, true}
                              : which == 2 ? grouped_plan{128, 128, 2, true, true}
                                           : fp4fuse::gemm::sm90::plan_grouped(p.capacity, p.E, p.N, p.H);
    INFO("plan " << plan.block_m << "x" << plan.block_n);
    cudaStream_t stream;
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const fp4fuse::result r = gmoe::run_fused(p.inputs(), p.output(), p.global(), fp4fuse::activation::swiglu{}, stream, &plan);
    FP4FUSE_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    INFO(r.message());
    REQUIRE(static_cast<bool>(r));
    FP4FUSE_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    const std::vector<std::vector<std::int32_t>> routings{first, {0, 0, 0, 150, 0, 0, 149, 1}, moe::route(150, 8, 2, moe::routing::skewed, g()),
                                                          {1, 0, 0, 0, 0, 0, 0, 0}, {0, 65, 0, 193, 0, 0, 0, 0}};
    for (const auto& counts : routings) {
      INFO("replay with counts of total " << moe::offsets_of(counts).back());
      p.reroute(counts);
      FP4FUSE_TEST_CUDA(cudaMemset(p.packed.as<void>(), poison, p.packed.bytes()));
      FP4FUSE_TEST_CUDA(cudaMemset(p.scales.as<void>(), poison, p.scales.bytes()));
      FP4FUSE_TEST_CUDA(cudaGraphLaunch(exec, stream));
      FP4FUSE_TEST_CUDA(cudaStreamSynchronize(stream));
      check_against_dense(p, plan, fp4fuse::activation::swiglu{});
    }
    FP4FUSE_TEST_CUDA(cudaGraphExecDestroy(exec));
    FP4FUSE_TEST_CUDA(cudaGraphDestroy(graph));
    FP4FUSE_TEST_CUDA(cudaStreamDestroy(stream));
  }
}

TEST_CASE("MoE L1 [gpu]: 0 rows clear the whole scale tensor and launch nothing", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  // No kernel: the NVFP4 binding's host work alone (the memset launch_grouped queues just before
  // a kernel) writes every scale byte 0x00, in both expert-start conventions; nothing else is
  // touched. The call is captured, so the graph shows what it queued: one memset node, of the
  // whole scale tensor, and no kernel.
  const int E = 5, I = 64, H = 256;
  device_buffer x(64), w(static_cast<std::size_t>(E) * 2 * I * H * 2), packed(256), S(4), offsets(4 * (E + 1));
  const float one = 1.0f;
  S.upload(&one, 4);
  const std::vector<std::int32_t> zeros(E + 1, 0);
  offsets.upload(zeros.data(), zeros.size() * 4);
  const auto run = [&](auto start) {
    using ExpertStart = decltype(start);
    const gmoe::grouped_layout<ExpertStart> layout{0, I / 16, E, offsets.as<std::int32_t>()};
    INFO("scale bytes " << layout.size_bytes());
    REQUIRE(layout.size_bytes() > 0);
    device_buffer scales(static_cast<std::size_t>(layout.size_bytes()));
    const gmoe::grouped_output<ExpertStart> out{packed.as<std::uint8_t>(), I / 2, scales.as<std::uint8_t>(), layout};
    const gmoe::inputs in{{x.as<const __nv_bfloat16>(), 0, H, H}, w.as<const __nv_bfloat16>(), nullptr};
    cudaStream_t stream = nullptr;
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph = nullptr;
    FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const fp4fuse::result r =
        gmoe::run_fused(in, out, fp4fuse::global_scale::per_tensor{S.as<const float>()}, fp4fuse::activation::swiglu{}, stream);
    FP4FUSE_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    INFO(r.message());
    REQUIRE(static_cast<bool>(r));
    std::size_t count = 0;
    FP4FUSE_TEST_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
    REQUIRE(count == 1);
    cudaGraphNode_t node = nullptr;
    FP4FUSE_TEST_CUDA(cudaGraphGetNodes(graph, &node, &count));
    cudaGraphNodeType type{};
    FP4FUSE_TEST_CUDA(cudaGraphNodeGetType(node, &type));
    REQUIRE(type == cudaGraphNodeTypeMemset);
    cudaMemsetParams m{};
    FP4FUSE_TEST_CUDA(cudaGraphMemsetNodeGetParams(node, &m));
    CHECK(m.dst == scales.as<void>());
    CHECK(m.width * m.elementSize * m.height == scales.bytes());
    run_once(graph, stream);
    FP4FUSE_TEST_CUDA(cudaStreamDestroy(stream));
    const auto bytes = scales.download();
    CHECK(std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == 0; }));
    CHECK(scales.guard_intact());
    const auto p = packed.download();
    CHECK(std::all_of(p.begin(), p.end(), [](unsigned char b) { return b == poison; }));
  };
  run(offset_bound{});
  run(padded_prefix_sum{});
}

namespace {
/// The dense BF16 epilogues of expert e of `p`, with its bias where `p` has one.
template <class Start>
fp4fuse::result dense_bf16_flows(const grouped_problem<Start>& p, int e, const fp4fuse::gemm::sm90::launch_plan& dp, __nv_bfloat16* gu,
                                 __nv_bfloat16* h) {
  const int count = p.counts[static_cast<std::size_t>(e)];
  const __nv_bfloat16* x_e = p.x.template as<__nv_bfloat16>() + std::size_t(p.offsets[static_cast<std::size_t>(e)]) * p.H;
  const __nv_bfloat16* w_e = p.w.template as<__nv_bfloat16>() + std::size_t(e) * p.N * p.H;
  const auto both = [&](auto bias) {
    const fp4fuse::result r = fp4fuse::gemm::gemm(x_e, w_e, count, p.N, p.H, fp4fuse::gemm::store_bf16<decltype(bias)>{{gu, count, p.N, p.N}, bias},
                                                  fp4fuse::gemm::engine::wgmma, nullptr, &dp);
    if (!r) return r;
    return fp4fuse::gemm::gemm(x_e, w_e, count, p.N, p.H,
                               fp4fuse::gemm::swiglu_bf16<fp4fuse::activation::swiglu, decltype(bias)>{{h, count, p.I, p.I}, {}, bias},
                               fp4fuse::gemm::engine::wgmma, nullptr, &dp);
  };
  if (p.with_bias) return both(fp4fuse::column_bias{p.bias.template as<float>() + std::size_t(e) * p.N, p.N});
  return both(fp4fuse::no_bias{});
}
}  // namespace

TEST_CASE("MoE L1 [gpu]: the BF16 flows equal the dense kernel's BF16 output expert by expert", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  auto g = rng("moe bf16");
  const std::vector<std::int32_t> counts{0, 1, 15, 128, 129, 0, 40, 193};
  for (const grouped_plan& plan : {grouped_plan{64, 256, 1, false}, grouped_plan{128, 256, 1, false}, grouped_plan{128, 128, 2, true},
                                   grouped_plan{192, 128, 2, false, true}})
  for (const bool with_bias : {false, true}) {
    INFO((with_bias ? "with" : "without") << " bias");
    grouped_problem<offset_bound> p(counts, 192, 96, 3, with_bias, false, g());
    device_buffer gu(std::size_t(p.capacity) * p.N * 2), h(std::size_t(p.capacity) * p.I * 2);
    const int* offs = p.d_offsets.as<std::int32_t>();
    REQUIRE(static_cast<bool>(gmoe::run_bf16<experimental>(p.inputs(), {gu.as<__nv_bfloat16>(), p.capacity, p.N, p.N}, p.E, offs, nullptr, &plan)));
    REQUIRE(static_cast<bool>(gmoe::run_swiglu_bf16<experimental>(p.inputs(), {h.as<__nv_bfloat16>(), p.capacity, p.I, p.I},
                                                                 fp4fuse::activation::swiglu{}, p.E, offs, nullptr, &plan)));
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
    const auto got_gu = gu.download(), got_h = h.download();
    const fp4fuse::gemm::sm90::launch_plan dp = dense_plan(plan);
    for (int e = 0; e < p.E; ++e) {
      const int count = counts[static_cast<std::size_t>(e)];
      if (count == 0) continue;
      INFO("expert " << e << " plan " << plan.block_m << "x" << plan.block_n);
      device_buffer dgu(std::size_t(count) * p.N * 2), dh(std::size_t(count) * p.I * 2);
      REQUIRE(static_cast<bool>(dense_bf16_flows(p, e, dp, dgu.as<__nv_bfloat16>(), dh.as<__nv_bfloat16>())));
      FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
      const auto want_gu = dgu.download(), want_h = dh.download();
      CHECK(std::equal(want_gu.begin(), want_gu.end(), got_gu.begin() + std::ptrdiff_t(p.offsets[static_cast<std::size_t>(e)]) * p.N * 2));
      CHECK(std::equal(want_h.begin(), want_h.end(), got_h.begin() + std::ptrdiff_t(p.offsets[static_cast<std::size_t>(e)]) * p.I * 2));
    }
    // Rows beyond the routed ones: untouched, in both outputs and past their ends.
    CHECK(std::all_of(got_gu.begin() + std::ptrdiff_t(p.rows) * p.N * 2, got_gu.end(), [](unsigned char c) { return c == poison; }));
    CHECK(std::all_of(got_h.begin() + std::ptrdiff_t(p.rows) * p.I * 2, got_h.end(), [](unsigned char c) { return c == poison; }));
    CHECK(gu.guard_intact());
    CHECK(h.guard_intact());
  }
}

TEST_CASE("MoE L1 [gpu]: the swap-AB plan refuses the BF16 flows with a sentence, writing nothing", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  grouped_problem<offset_bound> p({3, 0, 40}, 128, 64, 3, false, false, rng("moe swap-AB bf16")());
  device_buffer gu(std::size_t(p.capacity) * p.N * 2), h(std::size_t(p.capacity) * p.I * 2);
  const grouped_plan swap{192, 128, 1, false, false, true};
  const int* offs = p.d_offsets.as<std::int32_t>();
  for (const fp4fuse::result& r : {gmoe::run_bf16(p.inputs(), {gu.as<__nv_bfloat16>(), p.capacity, p.N, p.N}, p.E, offs, nullptr, &swap),
                                   gmoe::run_swiglu_bf16(p.inputs(), {h.as<__nv_bfloat16>(), p.capacity, p.I, p.I}, fp4fuse::activation::swiglu{},
                                                         p.E, offs, nullptr, &swap)}) {
    INFO(r.message());
    CHECK(r.code == fp4fuse::status::bad_shape);
    CHECK(std::string(r.message()).find("the swap-AB kernel takes the fused NVFP4 epilogue only") != std::string::npos);
  }
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  for (const device_buffer* b : {&gu, &h}) {
    const auto bytes = b->download();
    CHECK(std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == poison; }));
  }
}

TEST_CASE("MoE L1 [gpu]: the ping-pong and 192 x 128 kernels take their units from the caller's counter and leave it zero", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  auto g = rng("moe unit counter");
  // 8 experts of about 1000 rows, 2I = 1024: about 256 units of 128 x 256 (a cluster's pair of
  // 128 x 128 tiles; 192 x 256 for the 192 x 128 pairs, about 190), more than the resident
  // clusters, so clusters take several units each.
  const std::vector<std::int32_t> counts = moe::route(2000, 8, 4, moe::routing::uniform, g());
  device_buffer counter(sizeof(unsigned));
  FP4FUSE_TEST_CUDA(cudaMemset(counter.as<void>(), 0, sizeof(unsigned)));
  const fp4fuse::gemm::sm90::workspace ws{nullptr, counter.as<unsigned>(), 0, 1};
  for (const grouped_plan& plan : {grouped_plan{128, 128, 1, true}, grouped_plan{128, 128, 2, true}, grouped_plan{128, 128, 2, true, true},
                                   grouped_plan{192, 128, 2, false, true}}) {
    INFO("plan " << plan.block_m << "x128 " << (plan.pingpong ? "ping-pong" : "cooperative") << " cluster " << plan.cluster
                 << (plan.along_n ? " along N" : ""));
    grouped_problem<offset_bound> p(counts, 256, 512, 9, false, false, g());
    const auto run = [&] {
      const fp4fuse::result r = gmoe::run_fused<fp4fuse::intermediate::fp32, experimental>(p.inputs(), p.output(), p.global(),
                                                                                          fp4fuse::activation::swiglu{}, nullptr, &plan, &ws);
      INFO(r.message());
      REQUIRE(static_cast<bool>(r));
      FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
    };
    {
      // The caller's counter is the one taken from: left at 2^20, beyond every unit, it runs no
      // unit (nothing packed), and each cluster's one take moves it above 2^20. The counter kept
      // for the stream, zero, would run them all.
      const unsigned far = 1u << 20;
      counter.upload(&far, sizeof far);
      FP4FUSE_TEST_CUDA(cudaMemset(p.packed.as<void>(), poison, p.packed.bytes()));
      run();
      const auto packed = p.packed.download();
      CHECK(std::all_of(packed.begin(), packed.end(), [](unsigned char c) { return c == poison; }));
      unsigned taken = 0;
      FP4FUSE_TEST_CUDA(cudaMemcpy(&taken, counter.as<unsigned>(), sizeof taken, cudaMemcpyDeviceToHost));
      CHECK(taken > far);
      FP4FUSE_TEST_CUDA(cudaMemset(counter.as<void>(), 0, sizeof(unsigned)));
    }
    for (int launch = 0; launch < 3; ++launch) {
      INFO("launch " << launch);
      FP4FUSE_TEST_CUDA(cudaMemset(p.packed.as<void>(), poison, p.packed.bytes()));
      FP4FUSE_TEST_CUDA(cudaMemset(p.scales.as<void>(), poison, p.scales.bytes()));
      run();
      check_against_dense(p, plan, fp4fuse::activation::swiglu{});
      const auto left = counter.download();
      CHECK(std::all_of(left.begin(), left.end(), [](unsigned char c) { return c == 0; }));  // reset by the launch's last taker
      CHECK(counter.guard_intact());
    }
  }
}

TEST_CASE("MoE L1 [gpu]: a workspace without a counter is refused for a plan that takes its units, writing nothing", "[gpu][gemm][moe]") {
  if (!grouped_runs_here()) return;
  grouped_problem<offset_bound> p({40, 0, 130}, 128, 64, 3, false, false, rng("moe no counter")());
  device_buffer gu(std::size_t(p.capacity) * p.N * 2);
  const fp4fuse::gemm::sm90::workspace empty{};
  FP4FUSE_TEST_CUDA(cudaMemset(p.packed.as<void>(), poison, p.packed.bytes()));
  FP4FUSE_TEST_CUDA(cudaMemset(p.scales.as<void>(), poison, p.scales.bytes()));
  const int* offs = p.d_offsets.as<std::int32_t>();
  for (const grouped_plan& taker : {grouped_plan{128, 128, 2, true, true}, grouped_plan{192, 128, 2, false, true}}) {
    INFO("plan " << taker.block_m << "x128");
    for (const fp4fuse::result& r : {gmoe::run_fused(p.inputs(), p.output(), p.global(), fp4fuse::activation::swiglu{}, nullptr, &taker, &empty),
                                     gmoe::run_bf16(p.inputs(), {gu.as<__nv_bfloat16>(), p.capacity, p.N, p.N}, p.E, offs, nullptr, &taker, &empty)}) {
      INFO(r.message());
      CHECK(r.code == fp4fuse::status::null_pointer);
      CHECK(std::string(r.message()).find("workspace has no counter") != std::string::npos);
    }
  }
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  for (const device_buffer* b : {&p.packed, &p.scales, &gu}) {
    const auto bytes = b->download();
    CHECK(std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == poison; }));
  }
  // A plan that needs no counter runs with the same workspace.
  const grouped_plan cooperative{128, 128, 2, false};
  const fp4fuse::result r = gmoe::run_fused<fp4fuse::intermediate::fp32, experimental>(p.inputs(), p.output(), p.global(), fp4fuse::activation::swiglu{},
                                                                                      nullptr, &cooperative, &empty);
  INFO(r.message());
  REQUIRE(static_cast<bool>(r));
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  check_against_dense(p, cooperative, fp4fuse::activation::swiglu{});
}
