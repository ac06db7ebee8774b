// What bounds the grouped MoE L1 (bench_moe.cu) at prefill sizes, from cuBLASLt alone: for each
// model and T of bench_moe (uniform routing's routed rows and active experts), in one process
// and against the same 8192^3 reference as bench_moe's roofline:
//   - dense: one GEMM of the grouped L1's FLOPs, M = routed rows, N = 2I, K = H (one expert's W:
//     the FLOPs without the W stream);
//   - batched: a strided batch of `active` GEMMs of ceil(routed / active) rows each, each with its
//     own expert's W: the grouped L1 with perfectly balanced experts (the same W bytes and, up to
//     the rounding, the same FLOPs), i.e. what cuBLAS reaches on the problem's own shape;
//   - expert: one expert's GEMM (ceil(routed / active) rows), for its rate;
// each as bench_moe times kernels (median of --reps round-robin runs after 3 warm-ups, L2 flushed
// by a 256 MiB read before each) and also back to back for about 0.3 s ("sustained": no flush, no
// idle gap, the clock and power a long prefill kernel runs at). The 8192^3 reference is timed the
// same two ways at the start and again at the end (after the long GEMMs have heated the GPU).
// Every phase prints its wall-clock interval (PHASE lines) so that nvidia-smi samples taken in the
// background can be assigned to it (scripts: the engine2 GPU run, bench/results/engine2.md).
//
//   bench_moe_bounds [--reps N] [--sustain-ms MS] [--only MODEL T] [--profile MODEL T]
//   (--profile: runs the batched GEMM of that shape once, untimed, between cudaProfilerStart and
//   cudaProfilerStop, for `ncu --profile-from-start off`)
#include <cuda_profiler_api.h>

#include <chrono>
#include <ctime>
#include <string>

#include "../examples/l1_gemm/moe_data.cuh"
#include "bench_support.cuh"
#include "cublaslt_gemm.cuh"

namespace {

using namespace bench;

double g_sustain_ms = 300;

/// Wall-clock now, as seconds since the epoch and as nvidia-smi's timestamp format (local time).
std::string now_stamp() {
  const auto t = std::chrono::system_clock::now();
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y/%m/%d %H:%M:%S", std::localtime(&s));
  return std::string(buf) + "." + (ms < 100 ? (ms < 10 ? "00" : "0") : "") + std::to_string(ms);
}

/// Runs `f`, printing the wall-clock interval it took as `PHASE name | begin | end`.
template <class F>
auto phase(const std::string& name, F&& f) {
  const std::string begin = now_stamp();
  auto r = f();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("PHASE %s | %s | %s\n", name.c_str(), begin.c_str(), now_stamp().c_str());
  std::fflush(stdout);
  return r;
}

/// Mean microseconds per launch of `launch` run back to back for about g_sustain_ms (at least 3),
/// L2 not flushed: the rate under sustained load.
double sustained_us(const std::function<void()>& launch, double median_us) {
  const int n = std::max(3, static_cast<int>(g_sustain_ms * 1000.0 / std::max(median_us, 1.0)));
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  launch();
  CHECK_CUDA(cudaEventRecord(a));
  for (int i = 0; i < n; ++i) launch();
  CHECK_CUDA(cudaEventRecord(b));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  return ms * 1000.0 / n;
}

struct reference {
  double flushed_tflops, sustained_tflops;
};

reference time_reference(const char* when) {
  const reference_gemm g;  // as bench_moe's roofline: the heuristic's fastest, --reps runs each
  const auto run = [&] { g.run(); };
  const double us = phase(std::string("ref8192 flushed ") + when, [&] { return time_us(run); });
  const double sus = phase(std::string("ref8192 sustained ") + when, [&] { return sustained_us(run, us); });
  const reference r{g.tflops(us), g.tflops(sus)};
  std::printf("cuBLAS BF16 8192^3 (%s): flushed %.1f us = %.0f TFLOP/s, sustained %.1f us = %.0f TFLOP/s\n", when, us, r.flushed_tflops, sus,
              r.sustained_tflops);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int only_model = -1, only_T = -1;
  bool profile = false;
  g_reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&] { return bench::option_value(argc, argv, i); };
    if (a == "--reps") g_reps = std::atoi(next());
    else if (a == "--sustain-ms") g_sustain_ms = std::atof(next());
    else if (a == "--only" || a == "--profile") {
      profile = a == "--profile";
      only_model = std::atoi(next());
      only_T = std::atoi(next());
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!have_device("bench_moe_bounds")) return 0;
  CHECK_CUDA(cudaMalloc(&g_flush, flush_bytes));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));

  double copy_gbps = 1;
  reference ref{1, 1};
  if (!profile) {
    const std::size_t bytes = std::size_t(1) << 30;
    void *src = nullptr, *dst = nullptr;
    CHECK_CUDA(cudaMalloc(&src, bytes));
    CHECK_CUDA(cudaMalloc(&dst, bytes));
    CHECK_CUDA(cudaMemset(src, 1, bytes));
    copy_gbps = 2.0 * bytes / (time_us([&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }) * 1e-6) / 1e9;
    CHECK_CUDA(cudaFree(src));
    CHECK_CUDA(cudaFree(dst));
    ref = time_reference("start");
  }
  std::printf("%s, device copy %.0f GB/s; median of %d runs, L2 flushed; sustained: back to back for %.0f ms\n\n", prop.name, copy_gbps,
              g_reps, g_sustain_ms);

  std::string table =
      "| model, T (uniform) | routed | active | rows per expert | roofline us | dense M=routed us (TFLOP/s, x ref) | dense sustained us (x ref sust.) "
      "| batched us (x roofline) | batched sustained us (x roofline at sust. ref) | one expert us (TFLOP/s) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const l1_gemm::moe::model* m : {&l1_gemm::moe::deepseek_v3, &l1_gemm::moe::gpt_oss_120b}) {
    const int mi = m == &l1_gemm::moe::deepseek_v3 ? 0 : 1;
    if (only_model >= 0 && mi != only_model) continue;
    const int E = m->experts, H = m->hidden, N = 2 * m->inter;
    const long long max_routed = 32768LL * m->top_k;
    __nv_bfloat16 *x = nullptr, *w = nullptr, *d = nullptr;
    CHECK_CUDA(cudaMalloc(&x, std::size_t(max_routed + 64LL * E) * H * 2));
    CHECK_CUDA(cudaMalloc(&w, std::size_t(E) * N * H * 2));
    CHECK_CUDA(cudaMalloc(&d, std::size_t(max_routed + 64LL * E) * N * 2));
    fill_bf16<<<4096, 256>>>(x, std::size_t(max_routed + 64LL * E) * H, 3u, 1.0f);
    fill_bf16<<<4096, 256>>>(w, std::size_t(E) * N * H, 4u, 1.0f);
    CHECK_CUDA(cudaGetLastError());
    for (int T : {64, 512, 4096, 32768}) {
      if (only_T >= 0 && T != only_T) continue;
      const auto counts = l1_gemm::moe::route(T, E, m->top_k, l1_gemm::moe::routing::uniform, 0x5EED0000u + static_cast<unsigned>(T) * 2);
      int routed = 0, active = 0;
      for (int k : counts) {
        routed += k;
        active += k > 0;
      }
      const int per = (routed + active - 1) / active;
      const std::string name = std::string(m->name) + " T=" + std::to_string(T);
      // cuBLASLt's algorithm choice times every candidate: with 2 runs each here, so that the
      // large shapes' choice takes seconds, not minutes.
      const int reps = g_reps;
      g_reps = 2;
      const cublas_gemm dense(x, w, d, routed, N, H);
      const cublas_gemm batched(x, w, d, per, N, H,
                                cublas_batch{active, static_cast<long long>(per) * H, static_cast<long long>(N) * H, static_cast<long long>(per) * N});
      const cublas_gemm expert(x, w, d, per, N, H);
      g_reps = reps;
      const auto run_dense = [&] { dense.run(x, w, d); };
      const auto run_batched = [&] { batched.run(x, w, d); };
      const auto run_expert = [&] { expert.run(x, w, d); };
      if (profile) {  // only this launch between cudaProfilerStart and Stop (ncu --profile-from-start off)
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaProfilerStart());
        run_batched();
        CHECK_CUDA(cudaProfilerStop());
        CHECK_CUDA(cudaDeviceSynchronize());
        std::printf("%s: ran the batched GEMM once (for a profiler)\n", name.c_str());
        continue;
      }
      const auto t = phase(name + " flushed", [&] { return time_round_robin({run_dense, run_batched, run_expert}); });
      const double dense_sus = phase(name + " dense sustained", [&] { return sustained_us(run_dense, t[0]); });
      const double batched_sus = phase(name + " batched sustained", [&] { return sustained_us(run_batched, t[1]); });
      const double flops = 2.0 * routed * N * H, batched_flops = 2.0 * active * per * N * double(H), expert_flops = 2.0 * per * N * double(H);
      const double w_bytes = double(active) * N * H * 2;
      const double roofline = std::max(w_bytes / (copy_gbps * 1e9), flops / (ref.flushed_tflops * 1e12)) * 1e6;
      const double tf = flops / (t[0] * 1e-6) / 1e12, tf_sus = flops / (dense_sus * 1e-6) / 1e12;
      // The batched GEMM computes ceil(routed / active) rows per expert (more FLOPs where that rounds
      // up, the same W bytes): its x roofline is against the roofline of its own FLOPs.
      const double batched_roofline = std::max(w_bytes / (copy_gbps * 1e9), batched_flops / (ref.flushed_tflops * 1e12)) * 1e6;
      const double batched_roofline_sus = std::max(w_bytes / (copy_gbps * 1e9), batched_flops / (ref.sustained_tflops * 1e12)) * 1e6;
      std::printf("%-24s routed %6d active %3d rows/expert %4d: roofline %8.1f us; dense %8.1f us (%.0f TFLOP/s, %.2fx ref) sustained %8.1f "
                  "(%.2fx sust. ref); batched %8.1f us (%.2fx roofline) sustained %8.1f (%.2fx sust. roofline); expert %7.1f us (%.0f TFLOP/s)\n",
                  name.c_str(), routed, active, per, roofline, t[0], tf, ref.flushed_tflops / tf, dense_sus, ref.sustained_tflops / tf_sus, t[1],
                  t[1] / batched_roofline, batched_sus, batched_sus / batched_roofline_sus, t[2], expert_flops / (t[2] * 1e-6) / 1e12);
      std::fflush(stdout);
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %d | %d | %d | %.1f | %.1f (%.0f, %.2fx) | %.1f (%.2fx) | %.1f (%.2fx) | %.1f (%.2fx) | %.1f (%.0f) |\n",
                    name.c_str(), routed, active, per, roofline, t[0], tf, ref.flushed_tflops / tf, dense_sus, ref.sustained_tflops / tf_sus, t[1],
                    t[1] / batched_roofline, batched_sus, batched_sus / batched_roofline_sus, t[2], expert_flops / (t[2] * 1e-6) / 1e12);
      table += line;
    }
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(d));
  }
  if (profile) return 0;
  const reference end = time_reference("end");
  std::printf("\nreference 8192^3: start flushed %.0f / sustained %.0f TFLOP/s, end flushed %.0f / sustained %.0f TFLOP/s\n\n%s",
              ref.flushed_tflops, ref.sustained_tflops, end.flushed_tflops, end.sustained_tflops, table.c_str());
  return 0;
}
