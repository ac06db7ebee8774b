// The grouped MoE L1 (fp4fuse::gemm::moe, include/fp4fuse/gemm/grouped.cuh) against what a PyTorch MoE runs today and
// against the roofline, for DeepSeek-V3 (E = 256, top-8, H = 7168, I = 2048) and GPT-OSS-120B
// (E = 128, top-4, H = 2880, I = 2880, bias, clamped SwiGLU), T in {64, 512, 4096, 32768} tokens,
// uniform and skewed routing (moe_data.cuh: expert 0 gets about half of the tokens).
//
// In one run (scripts/bench_moe.sh): this program writes the routings, bench/torch_grouped_mm.py
// times torch._grouped_mm on the same counts, and this program times, in the same process:
//   - the fused grouped L1 (flow 3: one launch, NVFP4 out in the per-expert 128x4 layout);
//   - fp4fuse::swiglu_quantize on the [routed, 2I] BF16 gate/up, which after torch._grouped_mm
//     is the best unfused pipeline (its time is added to torch's);
//   - the roofline: max(bytes of the experts that got tokens / copy bandwidth, FLOPs / cuBLAS's
//     BF16 rate on an 8192^3 GEMM), both measured here.
//
//   bench_moe --routings-out FILE                       write the routings (no GPU needed)
//   bench_moe [--torch FILE] [--reps N] [--markdown FILE] [--only MODEL T ROUTING] [--force BM BN CLUSTER PINGPONG]
//             [--candidate BM BN CLUSTER PINGPONG ALONG_N [MIN_T] | --candidate-swap-ab CLUSTER [MIN_T]]
//             [--candidate-fast-activation] [--profile]
//   (--candidate: the fused grouped L1 with that plan too, timed in the same round robin as the
//   planned one, at T >= MIN_T (default 0): an A/B of a plan in one run; --candidate-fast-activation:
//   the candidate runs the opt-in fast activations (swiglu_fast, swiglu_clamped_fast; other bits),
//   a measurement of what the exact activation costs that plan)
//   (MODEL 0 DeepSeek-V3, 1 GPT-OSS; T any token count; ROUTING 0 uniform, 1 skewed, 2 balanced: T * k / E rows each; --profile runs each kernel once, untimed, for ncu: the fused, the BF16, the candidate's fused)
//   [--idle-ms MS]: the GPU idles MS milliseconds before each configuration's timing, so that each
//   starts from the same clock and power state, as a process of its own does (the H200 runs its
//   long GEMMs at the 700 W limit, about 1.4 GHz, and takes a while to clock back up: a short
//   configuration timed right after a long one runs at the clock the long one left,
//   bench/results/engine2.md and engine21.md). Default 3000 when more than one configuration is
//   timed, 0 for one (--only); --idle-ms 0 times them back to back.
// Besides the roofline from the references measured once at the start, each configuration's round
// robin also times the 8192^3 cuBLAS GEMM and the 1 GiB copy (the "same-state roofline": the two
// ceilings at the clock and power state the configuration's kernels ran in). torch_grouped_mm.py
// times the same 8192^3 GEMM in its own round robin, so torch's time can also be compared at this
// program's clock (the "same clock" column: torch's time times its reference rate / ours).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "../examples/l1_gemm/moe_data.cuh"
#include <fp4fuse/gemm/grouped.cuh>
#include "bench_support.cuh"
#include "cublaslt_gemm.cuh"

namespace {

/// The swap-AB kernel's mainloop alone (a diagnostic for --candidate-swap-ab): an epilogue that
/// writes nothing, so the candidate's time splits into its mainloop's and its epilogue's.
struct no_swap_ab_epilogue {
  struct unit {
    template <int ChunkTokens, int Registers>
    __device__ void warpgroup_swap_ab(const float (&)[Registers], fp4fuse::gemm::index_t, fp4fuse::gemm::index_t, float*, int) const {}
    template <int N>
    __device__ void warpgroup_beyond_rows(fp4fuse::gemm::index_t, fp4fuse::gemm::index_t) const {}
    // What the other grouped kernels, which launch_grouped also instantiates, call: nothing either.
    template <int Registers>
    __device__ void warpgroup(const float (&)[Registers], fp4fuse::gemm::index_t, fp4fuse::gemm::index_t) const {}
    template <int N>
    __device__ void padding_beyond(const fp4fuse::gemm::tile_grid&, fp4fuse::gemm::index_t, fp4fuse::gemm::index_t) const {}
  };
  __device__ unit for_group(const fp4fuse::gemm::sm90::work_unit&) const { return {}; }
};

using namespace bench;
using experimental = fp4fuse::gemm::sm90::experimental_kernels;  // every grouped kernel: --force and --candidate may name any
using l1_gemm::moe::model;
using l1_gemm::moe::routing;
using start_t = fp4fuse::scale_layout::expert_start::offset_bound;

struct config {
  const model* m;
  int T;
  routing r;
  std::string name() const {
    return std::string(m->name) + " T=" + std::to_string(T) + " " + l1_gemm::moe::routing_name(r);
  }
  std::vector<std::int32_t> counts() const {
    return l1_gemm::moe::route(T, m->experts, m->top_k, r, 0x5EED0000u + static_cast<unsigned>(T) * 2 + (r == routing::skewed));
  }
};

/// The table's configurations; with `balanced`, also the balanced routing's, and with `extra_T`
/// > 0 that token count's too (both only with --only).
std::vector<config> all_configs(bool balanced = false, int extra_T = 0) {
  std::vector<config> c;
  std::vector<int> tokens{64, 512, 4096, 32768};
  if (extra_T > 0 && std::find(tokens.begin(), tokens.end(), extra_T) == tokens.end()) tokens.push_back(extra_T);
  for (const model* m : {&l1_gemm::moe::deepseek_v3, &l1_gemm::moe::gpt_oss_120b})
    for (int T : tokens) {
      for (routing r : {routing::uniform, routing::skewed}) c.push_back({m, T, r});
      if (balanced) c.push_back({m, T, routing::balanced});
    }
  return c;
}

/// One configuration of torch_grouped_mm.py's output.
struct torch_result {
  std::string name;
  double grouped_mm_us;  ///< median
  double ref_tflops;     ///< the 8192^3 reference GEMM in the same round robin (0: not in the file)
};

/// torch_grouped_mm.py's output (absent: not measured or failed).
std::vector<torch_result> read_torch(const char* path, double& torch_copy_gbps) {
  std::vector<torch_result> out;
  std::ifstream f(path);
  if (!f) return out;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  const auto number_after = [&](std::size_t at) { return std::strtod(s.c_str() + s.find(':', at) + 1, nullptr); };
  if (const std::size_t c = s.find("\"copy_gbps\""); c != std::string::npos) torch_copy_gbps = number_after(c);
  for (std::size_t p = s.find("\"name\""); p != std::string::npos; p = s.find("\"name\"", p + 1)) {
    const std::size_t q0 = s.find('"', s.find(':', p) + 1), q1 = s.find('"', q0 + 1);
    const std::string name = s.substr(q0 + 1, q1 - q0 - 1);
    const std::size_t end = s.find('}', q1);
    const std::size_t t = s.find("\"grouped_mm_us\"", q1), r = s.find("\"ref_tflops\"", q1);
    if (t != std::string::npos && t < end) out.push_back({name, number_after(t), r != std::string::npos && r < end ? number_after(r) : 0.0});
  }
  return out;
}

struct row {
  std::string name, plan;
  long long routed;
  int active;
  double roofline, fused, sq, torch, bf16_gemm;
  double torch_same_clock;  ///< torch's time scaled to this run's clock (0: unknown)
  double candidate;  ///< the --candidate plan's fused time (0: not timed)
  double same_state_roofline;  ///< from the reference GEMM and copy timed in this configuration's round robin
};

}  // namespace

int main(int argc, char** argv) {
  const char* routings_out = nullptr;
  const char* torch_path = nullptr;
  const char* markdown = nullptr;
  int only_model = -1, only_T = -1, only_routing = -1;
  fp4fuse::gemm::sm90::grouped_plan forced{};
  bool force = false, profile = false;
  fp4fuse::gemm::sm90::grouped_plan candidate{};
  bool has_candidate = false;
  int candidate_min_T = 0;
  bool candidate_fast = false;
  int idle_ms = -1;  // -1: the default (see the usage comment)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&] { return bench::option_value(argc, argv, i); };
    if (a == "--routings-out") routings_out = next();
    else if (a == "--torch") torch_path = next();
    else if (a == "--markdown") markdown = next();
    else if (a == "--reps") g_reps = std::atoi(next());
    else if (a == "--profile") profile = true;
    else if (a == "--idle-ms") {
      idle_ms = std::atoi(next());
      if (idle_ms < 0) {
        std::fprintf(stderr, "--idle-ms takes milliseconds >= 0 (0: configurations back to back)\n");
        return 2;
      }
    }
    else if (a == "--candidate-fast-activation") candidate_fast = true;
    else if (a == "--only") {
      only_model = std::atoi(next());
      only_T = std::atoi(next());
      only_routing = std::atoi(next());
    } else if (a == "--force") {
      forced.block_m = std::atoi(next());
      forced.block_n = std::atoi(next());
      forced.cluster = std::atoi(next());
      forced.pingpong = std::atoi(next()) != 0;
      force = true;
      if (!fp4fuse::gemm::sm90::valid(forced)) {
        std::fprintf(stderr, "--force names no grouped kernel\n");
        return 2;
      }
    } else if (a == "--candidate-swap-ab") {  // the swap-AB kernel in clusters of CLUSTER (fused flow only), from T = the optional value on
      const int cl = std::atoi(next());
      candidate = fp4fuse::gemm::sm90::grouped_plan{192, 128, cl, false, cl == 2, true};
      if (!fp4fuse::gemm::sm90::valid(candidate)) {
        std::fprintf(stderr, "--candidate-swap-ab names no swap-AB kernel (CLUSTER 1 or 2)\n");
        return 2;
      }
      if (i + 1 < argc && argv[i + 1][0] != '-') candidate_min_T = std::atoi(next());
      has_candidate = true;
    } else if (a == "--candidate") {
      candidate.block_m = std::atoi(next());
      candidate.block_n = std::atoi(next());
      candidate.cluster = std::atoi(next());
      candidate.pingpong = std::atoi(next()) != 0;
      candidate.along_n = std::atoi(next()) != 0;
      if (i + 1 < argc && argv[i + 1][0] != '-') candidate_min_T = std::atoi(next());
      has_candidate = true;
      if (!fp4fuse::gemm::sm90::valid(candidate)) {
        std::fprintf(stderr, "--candidate names no grouped kernel\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (candidate_fast && !has_candidate) {
    std::fprintf(stderr, "--candidate-fast-activation needs --candidate or --candidate-swap-ab\n");
    return 2;
  }
  std::vector<config> configs;
  for (const config& c : all_configs(only_routing == 2, only_T)) {
    const int mi = c.m == &l1_gemm::moe::deepseek_v3 ? 0 : 1;
    if (only_model >= 0 && (mi != only_model || c.T != only_T || static_cast<int>(c.r) != only_routing)) continue;
    configs.push_back(c);
  }
  if (routings_out != nullptr) {
    std::ofstream f(routings_out);
    f << "{\"configs\": [\n";
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const config& c = configs[i];
      f << " {\"name\": \"" << c.name() << "\", \"experts\": " << c.m->experts << ", \"hidden\": " << c.m->hidden
        << ", \"n\": " << 2 * c.m->inter << ", \"counts\": [";
      const auto counts = c.counts();
      for (std::size_t e = 0; e < counts.size(); ++e) f << (e ? ", " : "") << counts[e];
      f << "]}" << (i + 1 < configs.size() ? "," : "") << "\n";
    }
    f << "]}\n";
    std::printf("wrote %zu routings to %s\n", configs.size(), routings_out);
    return 0;
  }
  if (!have_device("bench_moe")) return 0;
  if (idle_ms < 0) idle_ms = configs.size() > 1 ? 3000 : 0;
  CHECK_CUDA(cudaMalloc(&g_flush, flush_bytes));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));

  // The two ceilings, measured in this run: device copy (read + write) and cuBLAS's BF16 rate.
  double copy_gbps = 1, cublas_tflops = 1;
  // The references' buffers stay allocated: each configuration's round robin times them again.
  const std::size_t copy_bytes = std::size_t(1) << 30;
  void *copy_src = nullptr, *copy_dst = nullptr;
  std::unique_ptr<reference_gemm> ref;
  std::function<void()> ref_launch, copy_launch;
  if (!profile) {
    CHECK_CUDA(cudaMalloc(&copy_src, copy_bytes));
    CHECK_CUDA(cudaMalloc(&copy_dst, copy_bytes));
    CHECK_CUDA(cudaMemset(copy_src, 1, copy_bytes));
    copy_launch = [=] { CHECK_CUDA(cudaMemcpyAsync(copy_dst, copy_src, copy_bytes, cudaMemcpyDeviceToDevice)); };
    copy_gbps = 2.0 * copy_bytes / (time_us(copy_launch) * 1e-6) / 1e9;
    ref = std::make_unique<reference_gemm>();
    ref_launch = [r = ref.get()] { r->run(); };
    cublas_tflops = ref->tflops(time_us(ref_launch));
  }
  double torch_copy_gbps = 0;
  const auto torch = torch_path != nullptr ? read_torch(torch_path, torch_copy_gbps) : std::vector<torch_result>{};
  std::printf("%s, device copy %.0f GB/s (torch measured %.0f), cuBLAS BF16 8192^3 %.0f TFLOP/s; median of %d runs, L2 flushed\n\n",
              prop.name, copy_gbps, torch_copy_gbps, cublas_tflops, g_reps);

  std::vector<row> rows;
  const model* weights_for = nullptr;
  __nv_bfloat16* w = nullptr;
  float* bias = nullptr;
  for (const config& c : configs) {
    const model& m = *c.m;
    const int E = m.experts, H = m.hidden, I = m.inter, N = 2 * I;
    if (weights_for != &m) {
      if (w != nullptr) CHECK_CUDA(cudaFree(w));
      if (bias != nullptr) CHECK_CUDA(cudaFree(bias));
      CHECK_CUDA(cudaMalloc(&w, std::size_t(E) * N * H * 2));
      CHECK_CUDA(cudaMalloc(&bias, std::size_t(E) * N * 4));
      const l1_gemm::moe::values v{0xC0FFEEu, H};
      CHECK_CUDA(l1_gemm::moe::fill_device(w, std::size_t(E) * N * H, v, 1));
      CHECK_CUDA(l1_gemm::moe::fill_device(bias, std::size_t(E) * N, v, 2));
      weights_for = &m;
    }
    const std::vector<std::int32_t> counts = c.counts();
    const std::vector<std::int32_t> offsets = l1_gemm::moe::offsets_of(counts);
    const int routed = offsets.back();
    int active = 0;
    for (int k : counts) active += k > 0;
    __nv_bfloat16 *x = nullptr, *gate_up = nullptr;
    std::uint8_t *packed = nullptr, *scales = nullptr, *dense_scales = nullptr;
    std::int32_t* d_offsets = nullptr;
    float* S = nullptr;
    const fp4fuse::gemm::moe::grouped_layout<start_t> layout{routed, I / 16, E, nullptr};
    const fp4fuse::scale_layout::swizzled_128x4 dense_layout{routed, I / 16};
    CHECK_CUDA(cudaMalloc(&x, std::size_t(routed) * H * 2));
    CHECK_CUDA(cudaMalloc(&gate_up, std::size_t(routed) * N * 2));
    CHECK_CUDA(cudaMalloc(&packed, std::size_t(routed) * I / 2));
    CHECK_CUDA(cudaMalloc(&scales, static_cast<std::size_t>(layout.size_bytes())));
    CHECK_CUDA(cudaMalloc(&dense_scales, static_cast<std::size_t>(dense_layout.size_bytes())));
    CHECK_CUDA(cudaMalloc(&d_offsets, offsets.size() * 4));
    CHECK_CUDA(cudaMalloc(&S, 4));
    CHECK_CUDA(cudaMemcpy(d_offsets, offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));
    const float S_host = 448.0f * 6.0f / 8.0f;  // timing only: any finite positive S
    CHECK_CUDA(cudaMemcpy(S, &S_host, 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(l1_gemm::moe::fill_device(x, std::size_t(routed) * H, l1_gemm::moe::values{0xC0FFEEu, H}, 0));
    CHECK_CUDA(l1_gemm::moe::fill_device(gate_up, std::size_t(routed) * N, l1_gemm::moe::values{0xBEEFu, 2 * H}, 0));

    const fp4fuse::gemm::moe::inputs in{{x, routed, H, H}, w, m.bias ? bias : nullptr};
    auto out = fp4fuse::gemm::moe::grouped_output<start_t>{packed, I / 2, scales, layout};
    out.layout.expert_offsets = d_offsets;
    const fp4fuse::gemm::sm90::grouped_plan* fp = force ? &forced : nullptr;
    const fp4fuse::global_scale::per_tensor gs{S};
    const fp4fuse::matrix_view<const __nv_bfloat16> gu{gate_up, routed, N, N};
    const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> dense_out{packed, I / 2, dense_scales,
                                                                                                               dense_layout};
    std::function<void()> fused, swiglu_q, bf16_gemm, fused_candidate;
    const bool timing_candidate = has_candidate && c.T >= candidate_min_T;
    const fp4fuse::gemm::sm90::grouped_plan* cp = &candidate;
    // The candidate plan's fused launch with activation `a` (the experimental kernel set compiles the swap-AB kernel too).
    const auto candidate_with = [&](auto a) -> std::function<void()> {
      return [=] { CHECK_FP4((fp4fuse::gemm::moe::run_fused<fp4fuse::intermediate::fp32, experimental>(in, out, gs, a, nullptr, cp))); };
    };
    if (m.bias) {
      const fp4fuse::activation::swiglu_clamped act{};
      fused = [=] { CHECK_FP4((fp4fuse::gemm::moe::run_fused<fp4fuse::intermediate::fp32, experimental>(in, out, gs, act, nullptr, fp))); };
      fused_candidate = candidate_fast ? candidate_with(fp4fuse::activation::swiglu_clamped_fast{act.alpha, act.limit}) : candidate_with(act);
      swiglu_q = [=] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gu, dense_out, fp4fuse::global_scale::per_tensor{S}, act)); };
    } else {
      const fp4fuse::activation::swiglu act{};
      fused = [=] { CHECK_FP4((fp4fuse::gemm::moe::run_fused<fp4fuse::intermediate::fp32, experimental>(in, out, gs, act, nullptr, fp))); };
      fused_candidate = candidate_fast ? candidate_with(fp4fuse::activation::swiglu_fast{}) : candidate_with(act);
      swiglu_q = [=] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gu, dense_out, fp4fuse::global_scale::per_tensor{S}, act)); };
    }
    bf16_gemm = [=] {
      CHECK_FP4(fp4fuse::gemm::moe::run_bf16<experimental>(in, fp4fuse::matrix_view<__nv_bfloat16>{gate_up, routed, N, N}, E, d_offsets, nullptr, fp));
    };
    const std::function<void()> mainloop_only = [=] {
      CHECK_FP4(fp4fuse::gemm::sm90::launch_grouped<experimental>(x, w, routed, N, H, E, d_offsets, no_swap_ab_epilogue{}, nullptr, cp));
    };
    std::vector<double> t{0, 0, 0, 0, 0, 0};
    if (!profile && idle_ms > 0) {
      CHECK_CUDA(cudaDeviceSynchronize());
      std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
    }
    if (profile) {
      fused();
      bf16_gemm();
      if (timing_candidate) fused_candidate();
      std::printf("%s: ran the fused and the BF16 grouped kernels once%s (for a profiler)\n", c.name().c_str(),
                  timing_candidate ? ", then the candidate's fused one" : "");
    } else {
      if (timing_candidate) {
        if (candidate.swap_ab) {
          t = time_round_robin({fused, swiglu_q, bf16_gemm, fused_candidate, ref_launch, copy_launch, mainloop_only});
        } else {
          t = time_round_robin({fused, swiglu_q, bf16_gemm, fused_candidate, ref_launch, copy_launch});
        }
      } else {
        t = time_round_robin({fused, swiglu_q, bf16_gemm, ref_launch, copy_launch});
        t.insert(t.begin() + 3, 0.0);
      }
    }
    CHECK_CUDA(cudaDeviceSynchronize());

    double torch_us = 0, torch_ref_tflops = 0;
    for (const torch_result& tr : torch)
      if (tr.name == c.name()) torch_us = tr.grouped_mm_us, torch_ref_tflops = tr.ref_tflops;
    const double w_bytes = double(active) * N * H * 2;
    const double flops = 2.0 * routed * N * H;
    // max(the W stream at the copy bandwidth, the FLOPs at the reference's rate), microseconds
    const auto roofline_at = [&](double gbps, double tflops) { return std::max(w_bytes / (gbps * 1e9), flops / (tflops * 1e12)) * 1e6; };
    const double roofline = roofline_at(copy_gbps, cublas_tflops);
    // The same ceilings from the reference GEMM and copy timed in this configuration's round robin.
    const double same_copy_gbps = t[5] > 0 ? 2.0 * copy_bytes / (t[5] * 1e-6) / 1e9 : copy_gbps;
    const double same_tflops = t[4] > 0 ? ref->tflops(t[4]) : cublas_tflops;
    const double same_roofline = roofline_at(same_copy_gbps, same_tflops);
    const fp4fuse::gemm::sm90::grouped_plan p = force ? forced : fp4fuse::gemm::sm90::plan_grouped(routed, E, N, H);
    const std::string plan = std::string(p.pingpong ? "ping-pong " : "coop. ") + std::to_string(p.block_m) + "x" + std::to_string(p.block_n) +
                             (p.cluster == 2 ? (p.along_n ? " cl2 along N" : " cl2") : "");
    // torch's time at this configuration's clock: scaled by the reference GEMM's rate in the two
    // round robins (a GEMM-bound time scales with the clock; the W-bound T <= 512 ones barely do).
    const double torch_same_clock = torch_us > 0 && torch_ref_tflops > 0 && t[4] > 0 ? torch_us * torch_ref_tflops / same_tflops : 0;
    rows.push_back({c.name(), plan, routed, active, roofline, t[0], t[1], torch_us, t[2], torch_same_clock, t[3], same_roofline});
    if (t[3] > 0)
      std::printf("  candidate plan%s: fused %8.1f us (%.2fx roofline), candidate / planned %.3f\n", candidate_fast ? " (fast activations)" : "", t[3],
                  t[3] / roofline, t[3] / t[0]);
    if (t.size() > 6) std::printf("  candidate's mainloop alone (no epilogue): %8.1f us (%.2fx roofline)\n", t[6], t[6] / roofline);
    std::printf("%-32s %-16s routed %7d active %3d: roofline %8.1f us, fused %8.1f us (%.2fx), BF16 GEMM %8.1f, torch %8.1f + sq %7.1f; "
                "same state: cuBLAS 8192^3 %.0f TFLOP/s, copy %.0f GB/s, roofline %.1f us, fused %.2fx\n",
                c.name().c_str(), plan.c_str(), routed, active, roofline, t[0], t[0] / roofline, t[2], torch_us, t[1], same_tflops,
                same_copy_gbps, same_roofline, t[0] / same_roofline);
    std::fflush(stdout);
    for (void* p2 : {static_cast<void*>(x), static_cast<void*>(gate_up), static_cast<void*>(packed), static_cast<void*>(scales),
                     static_cast<void*>(dense_scales), static_cast<void*>(d_offsets), static_cast<void*>(S)})
      CHECK_CUDA(cudaFree(p2));
  }

  std::string table = std::string("| model, T, routing | plan | routed rows | active experts | roofline us | fused grouped L1 us (x roofline) | "
                                   "ours BF16 grouped GEMM us | torch._grouped_mm us | + swiglu_quantize us | torch + quantize / fused | candidate plan") +
                      (candidate_fast ? " (fast activations)" : "") +
                      " us (x roofline, / planned) | "
                      "same-state roofline us (fused x it) | torch + quantize / fused, same clock |\n"
                      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  char line[768];
  for (const row& r : rows) {
    const double pipeline = r.torch > 0 ? r.torch + r.sq : 0;
    char cand[96] = "-";
    if (r.candidate > 0) std::snprintf(cand, sizeof cand, "%.1f (%.2fx, %.3f)", r.candidate, r.candidate / r.roofline, r.candidate / r.fused);
    char same_clock[32] = "-";
    if (r.torch_same_clock > 0) std::snprintf(same_clock, sizeof same_clock, "%.2fx", (r.torch_same_clock + r.sq) / r.fused);
    std::snprintf(line, sizeof line, "| %s | %s | %lld | %d | %.1f | %.1f (%.2fx) | %.1f | %s | %.1f | %s | %s | %.1f (%.2fx) | %s |\n", r.name.c_str(),
                  r.plan.c_str(), r.routed, r.active, r.roofline, r.fused, r.fused / r.roofline, r.bf16_gemm,
                  r.torch > 0 ? std::to_string(r.torch).substr(0, std::to_string(r.torch).find('.') + 2).c_str() : "-", r.sq,
                  pipeline > 0 ? (std::to_string(pipeline / r.fused).substr(0, 4) + "x").c_str() : "-", cand, r.same_state_roofline,
                  r.fused / r.same_state_roofline, same_clock);
    table += line;
  }
  std::printf("\n%s", table.c_str());
  if (markdown != nullptr) {
    if (FILE* f = std::fopen(markdown, "w")) {
      std::fprintf(f, "%s, device copy %.0f GB/s, cuBLAS BF16 8192^3 %.0f TFLOP/s, median of %d runs\n\n%s", prop.name, copy_gbps,
                   cublas_tflops, g_reps, table.c_str());
      std::fclose(f);
    }
  }
  if (w != nullptr) CHECK_CUDA(cudaFree(w));
  if (bias != nullptr) CHECK_CUDA(cudaFree(bias));
  ref.reset();
  for (void* p2 : {copy_src, copy_dst})
    if (p2 != nullptr) CHECK_CUDA(cudaFree(p2));
  return 0;
}
