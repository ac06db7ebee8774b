// The L1 GEMM against cuBLAS: for DeepSeek-V3 (H = 7168, 2I = 4096) and GPT-OSS (H = 2880,
// 2I = 5760), T in {8, 64, 512, 4096, 16384}: cuBLASLt's BF16 GEMM (the fastest of its heuristic's
// algorithms, chosen in this run), our GEMM with BF16 output, and the three flows of the example
// end to end (flows 1 and 2 include their standalone kernel). Median time (L2 flushed before
// every run) and TFLOP/s, ratios to cuBLAS from the same run, and for each shape the time to
// read W once at the device-copy bandwidth measured in the same run.
//
// The five entries of a shape (and a kernel that only reads W) are timed round-robin, L2 flushed
// by a 256 MiB read before each launch (bench_support.cuh).
//
//   bench_gemm [--reps N] [--markdown FILE] [--cluster 1|2] [--pingpong 0|1] [--only MODEL T]
//              [--force BLOCK_M BLOCK_N SPLITS] [--in-flight 1|2] [--profile MODEL T]
//   (--cluster / --pingpong force the schedule of unsplit plans; --force every plan's tile shape
//   and K split; --in-flight the ping-pong consumers' queued K steps; --only times one shape (model 0 DeepSeek-V3, 1 GPT-OSS; any T up to 16384); --profile runs one
//   shape untimed, for ncu)
#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../examples/l1_gemm/l1_gemm.cuh"
#include "bench_support.cuh"
#include "cublaslt_gemm.cuh"

namespace {

using namespace bench;
using act_t = fp4fuse::activation::swiglu;

std::string describe(const fp4fuse::gemm::sm90::launch_plan& p) {
  return std::string(p.pingpong == 1 ? "ping-pong" : "coop.") + " " + std::to_string(p.block_m) + "x" + std::to_string(p.block_n) +
         (p.splits > 1 ? " split " + std::to_string(p.splits) : "") + (p.cluster == 2 ? " cl2" : "");
}

/// The BF16 store's plan, flow 2's and flow 3's, once where they agree.
std::string describe(const fp4fuse::gemm::sm90::launch_plan& bf16, const fp4fuse::gemm::sm90::launch_plan& swiglu,
                     const fp4fuse::gemm::sm90::launch_plan& fused) {
  const std::string a = describe(bf16), b = describe(swiglu), c = describe(fused);
  if (a == b && b == c) return a;
  if (b == c) return "BF16 out, flow 1: " + a + "; flows 2, 3: " + b;
  if (a == b) return "BF16 out, flows 1, 2: " + a + "; flow 3: " + c;
  return "BF16 out, flow 1: " + a + "; flow 2: " + b + "; flow 3: " + c;
}

struct row {
  std::string model;
  int T, H, N;
  double cublas, ours_bf16, flow1, flow2, flow3, w_read, w_read_measured;
  double enqueue_cublas, enqueue_ours;
  fp4fuse::gemm::sm90::launch_plan plan;         ///< flow 3 (fused NVFP4)
  fp4fuse::gemm::sm90::launch_plan plan_swiglu;  ///< flow 2 (BF16 SwiGLU)
  fp4fuse::gemm::sm90::launch_plan plan_bf16;    ///< the plain BF16 store (ours, flow 1), which the kernels stage through TMA
};

}  // namespace

int main(int argc, char** argv) {
  const char* markdown = nullptr;
  int force_cluster = 0;
  int force_pingpong = -1;  // --pingpong 0|1: every non-split plan cooperative / ping-pong
  // --profile MODEL T: one shape only (model 0 DeepSeek-V3, 1 GPT-OSS), each GEMM run 3 times
  // without timing, for ncu.
  int profile_model = -1, profile_tokens = 0;  // --cluster 1|2: every non-split plan with that cluster size
  bool timed_profile = false;                  // --only: one shape, timed
  int force_block_m = 0, force_block_n = 0, force_splits = 0, in_flight = 0;
  g_reps = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      g_reps = std::max(1, std::atoi(argv[++i]));
    } else if ((a == "--profile" || a == "--only") && i + 2 < argc) {
      timed_profile = a == "--only";
      profile_model = std::atoi(argv[++i]);
      profile_tokens = std::atoi(argv[++i]);
    } else if (a == "--in-flight" && i + 1 < argc) {
      in_flight = std::atoi(argv[++i]);
    } else if (a == "--force" && i + 3 < argc) {
      force_block_m = std::atoi(argv[++i]);
      force_block_n = std::atoi(argv[++i]);
      force_splits = std::atoi(argv[++i]);
    } else if (a == "--pingpong" && i + 1 < argc) {
      force_pingpong = std::atoi(argv[++i]);
    } else if (a == "--cluster" && i + 1 < argc) {
      force_cluster = std::atoi(argv[++i]);
    } else if (a == "--markdown" && i + 1 < argc) {
      markdown = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_gemm [--reps N] [--cluster 1|2] [--pingpong 0|1] [--only MODEL T] [--force BLOCK_M BLOCK_N SPLITS] [--in-flight 1|2] "
                           "[--profile MODEL T] [--markdown FILE]\n");
      return 2;
    }
  }
  if (profile_model >= 0 && (profile_model > 1 || profile_tokens < 1 || profile_tokens > 16384)) {
    std::fprintf(stderr, "--only / --profile MODEL T: MODEL 0 or 1, 1 <= T <= 16384\n");
    return 2;
  }
  if (force_block_n != 0 && (force_pingpong >= 0 || in_flight != 0)) {
    std::fprintf(stderr, "--force names a cooperative plan: it does not combine with --pingpong or --in-flight\n");
    return 2;
  }
  const fp4fuse::gemm::sm90::launch_plan forced{force_block_n, force_splits, 0, 0, -1, 0, force_block_m};
  if (force_block_n != 0 && !fp4fuse::gemm::sm90::validate_plan(&forced)) {
    std::fprintf(stderr, "--force %d %d %d: no such plan\n", force_block_m, force_block_n, force_splits);
    return 2;
  }
  if (!have_device("bench_gemm")) return 0;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const fp4fuse::gemm::engine engine = fp4fuse::gemm::resolve(fp4fuse::gemm::engine::automatic);
  if (engine != fp4fuse::gemm::engine::wgmma) std::printf("note: the wgmma engine cannot run here; timing the mma.sync engine\n");
  CHECK_CUDA(cudaMalloc(&g_flush, flush_bytes));

  // Reference bandwidth: a 1 GiB device-to-device copy (2 GiB moved).
  const std::size_t copy_bytes = std::size_t(1) << 30;
  void *src = nullptr, *dst = nullptr;
  CHECK_CUDA(cudaMalloc(&src, copy_bytes));
  CHECK_CUDA(cudaMalloc(&dst, copy_bytes));
  CHECK_CUDA(cudaMemset(src, 1, copy_bytes));
  const double copy_gbps = 2.0 * copy_bytes / (time_us([&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice)); }) * 1e-6) / 1e9;
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(dst));
  std::printf("%s, device copy %.0f GB/s, engine %s, median of %d runs, round-robin, L2 flushed (256 MiB read) before each\n\n", prop.name, copy_gbps,
              fp4fuse::gemm::engine_name(engine), g_reps);

  struct model {
    const char* name;
    int H, I;
  };
  const model models[] = {{"DeepSeek-V3", 7168, 2048}, {"GPT-OSS", 2880, 2880}};
  std::vector<int> tokens{8, 64, 512, 4096, 16384};
  // --only / --profile MODEL T: any T up to the buffers' 16384 rows, not only the table's.
  if (profile_model >= 0 && std::find(tokens.begin(), tokens.end(), profile_tokens) == tokens.end()) tokens = {profile_tokens};
  std::vector<row> rows;
  for (const model& m : models) {
    if (profile_model >= 0 && &m != &models[profile_model]) continue;
    const int Tmax = 16384, H = m.H, I = m.I, N = 2 * m.I;
    __nv_bfloat16 *x, *w, *gate_up, *h;
    std::uint8_t *packed, *scales;
    float *S, *amax;
    CHECK_CUDA(cudaMalloc(&x, std::size_t(Tmax) * H * 2));
    CHECK_CUDA(cudaMalloc(&w, std::size_t(N) * H * 2));
    CHECK_CUDA(cudaMalloc(&gate_up, std::size_t(Tmax) * N * 2));
    CHECK_CUDA(cudaMalloc(&h, std::size_t(Tmax) * I * 2));
    CHECK_CUDA(cudaMalloc(&packed, std::size_t(Tmax) * I / 2));
    CHECK_CUDA(cudaMalloc(&scales, static_cast<std::size_t>(l1_gemm::layout{Tmax, I / 16}.size_bytes())));
    CHECK_CUDA(cudaMalloc(&S, 4));
    CHECK_CUDA(cudaMalloc(&amax, 4));
    // Activations of unit scale and weights of 2 / sqrt(H): gate and up of order 1, as in a
    // trained layer (SiLU's IEEE division takes a slow path for gate < -87, see bench/HISTORY.md).
    fill_bf16<<<4096, 256>>>(x, std::size_t(Tmax) * H, 1u, 1.0f);
    fill_bf16<<<4096, 256>>>(w, std::size_t(N) * H, 2u, 2.0f / std::sqrt(static_cast<float>(H)));
    CHECK_CUDA(cudaGetLastError());
    for (int T : tokens) {
      if (profile_model >= 0 && T != profile_tokens) continue;
      const l1_gemm::problem p{x, w, T, H, I, gate_up, h, packed, scales, S};
      CHECK_FP4(fp4fuse::gemm::gemm(x, w, T, N, H, fp4fuse::gemm::swiglu_bf16<act_t>{{h, T, I, I}, act_t{}}, engine));
      CHECK_FP4(fp4fuse::amax(fp4fuse::matrix_view<const __nv_bfloat16>{h, T, I, I}, amax, fp4fuse::global_scale::per_tensor{S}));  // the static scale every flow uses
      CHECK_CUDA(cudaDeviceSynchronize());
      row r{m.name, T, H, N};
      // The launcher's plans (D's rows here are 16-byte aligned, so the plain BF16 store is staged;
      // each epilogue's column granule), then the command line's overrides, the same for all.
      constexpr int granule_fused = fp4fuse::gemm::column_granule<fp4fuse::gemm::swiglu_nvfp4<act_t>>;
      constexpr int granule_swiglu = fp4fuse::gemm::column_granule<fp4fuse::gemm::swiglu_bf16<act_t>>;
      constexpr int granule_bf16 = fp4fuse::gemm::column_granule<fp4fuse::gemm::store_bf16<>>;
      r.plan = fp4fuse::gemm::sm90::plan(T, N, H, prop.multiProcessorCount, false, granule_fused);
      r.plan_swiglu = fp4fuse::gemm::sm90::plan(T, N, H, prop.multiProcessorCount, false, granule_swiglu);
      r.plan_bf16 = fp4fuse::gemm::sm90::plan(T, N, H, prop.multiProcessorCount, true, granule_bf16);
      for (auto [lp, granule] : {std::pair{&r.plan, granule_fused}, {&r.plan_swiglu, granule_swiglu}, {&r.plan_bf16, granule_bf16}}) {
        fp4fuse::gemm::sm90::launch_plan& q = *lp;
        if (force_pingpong >= 0 && q.splits == 1) {
          // --pingpong 0: the cooperative 128 x 256 kernel where the plan chose ping-pong; 1: the ping-pong.
          q = force_pingpong == 1 ? fp4fuse::gemm::sm90::launch_plan{128, 1, 0, 0, 1, 1}
                                  : q.pingpong == 1 ? fp4fuse::gemm::sm90::launch_plan{256, 1, 0, 0, 0}
                                                    : q;
        }
        // --force: each flow whose epilogue takes the tile's width (64 x 48: not flow 3's NVFP4 blocks).
        if (force_block_n != 0 && fp4fuse::gemm::sm90::holds_column_granule(forced.block_m, forced.block_n, granule)) q = forced;
        // --cluster: every unsplit plan with a clustered instance (64 x 48 tiles have none).
        if (force_cluster != 0 && q.splits == 1 &&
            fp4fuse::gemm::sm90::dense_kernels::contains(fp4fuse::gemm::sm90::dense_key(q, force_cluster))) {
          q.cluster = force_cluster;
        }
        if (q.pingpong == 1 && in_flight != 0) q.in_flight = in_flight;
        q.cluster = fp4fuse::gemm::sm90::cluster_for(q, T);
      }
      const bool wgmma = engine == fp4fuse::gemm::engine::wgmma;
      const fp4fuse::gemm::sm90::launch_plan* pp = wgmma ? &r.plan : nullptr;
      const fp4fuse::gemm::sm90::launch_plan* pp_bf16 = wgmma ? &r.plan_bf16 : nullptr;
      const fp4fuse::gemm::sm90::launch_plan* pp_swiglu = wgmma ? &r.plan_swiglu : nullptr;
      if (profile_model >= 0 && !timed_profile) {
        const int saved = g_reps;
        g_reps = 1;
        const cublas_gemm cublas(x, w, gate_up, T, N, H);
        g_reps = saved;
        for (int i = 0; i < 3; ++i) {
          cublas.run(x, w, gate_up);
          CHECK_FP4(fp4fuse::gemm::gemm(x, w, T, N, H, fp4fuse::gemm::store_bf16{{gate_up, T, N, N}}, engine, nullptr, pp_bf16));
          CHECK_FP4(l1_gemm::run(p, l1_gemm::flow::fused_nvfp4<>{}, act_t{}, engine, nullptr, pp));
        }
        CHECK_CUDA(cudaDeviceSynchronize());
        std::printf("profiled %s T=%d\n", m.name, T);
        continue;
      }
      const cublas_gemm cublas(x, w, gate_up, T, N, H);
      const std::function<void()> cublas_run = [&] { cublas.run(x, w, gate_up); };
      const std::function<void()> ours_run = [&] {
        CHECK_FP4(fp4fuse::gemm::gemm(x, w, T, N, H, fp4fuse::gemm::store_bf16{{gate_up, T, N, N}}, engine, nullptr, pp_bf16));
      };
      const std::vector<double> t = time_round_robin({
          cublas_run,
          ours_run,
          [&] { CHECK_FP4(l1_gemm::run(p, l1_gemm::flow::interleaved_bf16{}, act_t{}, engine, nullptr, pp_bf16)); },
          [&] { CHECK_FP4(l1_gemm::run(p, l1_gemm::flow::compact_bf16{}, act_t{}, engine, nullptr, pp_swiglu)); },
          [&] { CHECK_FP4(l1_gemm::run(p, l1_gemm::flow::fused_nvfp4<>{}, act_t{}, engine, nullptr, pp)); },
          [&] { read_bytes(w, std::size_t(N) * H * 2); },
      });
      r.cublas = t[0], r.ours_bf16 = t[1], r.flow1 = t[2], r.flow2 = t[3], r.flow3 = t[4], r.w_read_measured = t[5];
      r.enqueue_cublas = enqueue_us(cublas_run);
      r.enqueue_ours = enqueue_us(ours_run);
      r.w_read = double(N) * H * 2 / (copy_gbps * 1e9) * 1e6;
      rows.push_back(r);
      const double tf = 2.0 * T * H * N * 1e-6;
      std::printf("%s | ", describe(r.plan_bf16, r.plan_swiglu, r.plan).c_str());
      std::printf("%-11s T=%5d H=%d 2I=%d  cuBLAS %8.1f us %6.1f TF | ours BF16 %8.1f us (%.2fx) | flow1 %.2fx flow2 %.2fx flow3 %.2fx | "
                  "W read %.1f us (flow3 %.2fx), measured %.1f us | enqueue us: cuBLAS %.1f ours %.1f\n",
                  m.name, T, H, N, r.cublas, tf / r.cublas, r.ours_bf16, r.ours_bf16 / r.cublas, r.flow1 / r.cublas,
                  r.flow2 / r.cublas, r.flow3 / r.cublas, r.w_read, r.flow3 / r.w_read, r.w_read_measured, r.enqueue_cublas,
                  r.enqueue_ours);
      std::fflush(stdout);
    }
    cudaFree(x), cudaFree(w), cudaFree(gate_up), cudaFree(h), cudaFree(packed), cudaFree(scales), cudaFree(S), cudaFree(amax);
  }

  if (markdown != nullptr) {
    FILE* f = std::fopen(markdown, "w");
    if (f == nullptr) {
      std::perror(markdown);
      return 1;
    }
    std::fprintf(f, "%s, device copy %.0f GB/s, engine %s; median of %d runs timed round-robin, L2 flushed (256 MiB read) before "
                 "each; time in us (TFLOP/s); x = time / cuBLAS time; W read: at copy bandwidth / by a read-only kernel in the same run.\n\n", prop.name, copy_gbps, fp4fuse::gemm::engine_name(engine), g_reps);
    std::fprintf(f, "| model | T | our schedule | cuBLASLt BF16 | ours, BF16 out | flow 1: BF16 + swiglu_quantize | flow 2: BF16 SwiGLU + quantize | "
                    "flow 3: fused NVFP4 | W read at copy BW / measured |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (const row& r : rows) {
      const double tf = 2.0 * r.T * r.H * r.N * 1e-6;
      auto cell = [&](double t) { return std::to_string(t).substr(0, std::to_string(t).find('.') + 2); };
      std::fprintf(f, "| %s | %d | %s | %s (%.0f) | %s (%.0f) %.2fx | %s (%.0f) %.2fx | %s (%.0f) %.2fx | %s (%.0f) %.2fx | %.1f (flow 3: %.2fx) / %.1f |\n",
                   r.model.c_str(), r.T, describe(r.plan_bf16, r.plan_swiglu, r.plan).c_str(), cell(r.cublas).c_str(), tf / r.cublas, cell(r.ours_bf16).c_str(), tf / r.ours_bf16,
                   r.ours_bf16 / r.cublas, cell(r.flow1).c_str(), tf / r.flow1, r.flow1 / r.cublas, cell(r.flow2).c_str(), tf / r.flow2,
                   r.flow2 / r.cublas, cell(r.flow3).c_str(), tf / r.flow3, r.flow3 / r.cublas, r.w_read, r.flow3 / r.w_read, r.w_read_measured);
    }
    std::fclose(f);
  }
  return 0;
}
