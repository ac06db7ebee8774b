// fp4fuse MoE L1 example: the first GEMM of an MoE layer over all experts in one launch, SwiGLU
// and NVFP4 in its epilogue (fp4fuse::gemm::moe, include/fp4fuse/gemm/grouped.cuh), for DeepSeek-V3 or GPT-OSS-120B shapes
// with routed tokens sorted by expert. It checks sampled rows of the fused output (flow 3) against
// a float64 host reference and its scale padding, prints the time of the fused grouped kernel next
// to the grouped BF16 GEMM followed by the standalone kernel, and the bytes each writes.
//
//   moe_l1 [deepseek|gptoss] [T] [--routing uniform|skewed] [--experts E] [--reps N] [--seed S]
//   defaults: deepseek, T = 512 tokens (top-8: 4096 routed rows), all 256 experts, uniform
// Without a GPU it prints the problem and the host reference of a few rows (the grouped kernel
// needs an sm_90 GPU).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "example_support.hpp"
#include "l1_gemm/moe_data.cuh"
#include <fp4fuse/gemm/grouped.cuh>
#include "l1_gemm/moe_reference.hpp"

namespace {


using start_t = fp4fuse::scale_layout::expert_start::offset_bound;  // TensorRT-LLM's and flashinfer's convention

struct options {
  l1_gemm::moe::model m = l1_gemm::moe::deepseek_v3;
  int T = 512, reps = 10, experts = 0;
  l1_gemm::moe::routing r = l1_gemm::moe::routing::uniform;
  std::uint64_t seed = 0;
};

options parse(int argc, char** argv) {
  options o;
  o.seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&] { return examples_cli::option_value(i, argc, argv); };
    if (a == "deepseek") o.m = l1_gemm::moe::deepseek_v3;
    else if (a == "gptoss") o.m = l1_gemm::moe::gpt_oss_120b;
    else if (a == "--routing") {
      const std::string r = value();
      if (r != "uniform" && r != "skewed") {
        std::fprintf(stderr, "--routing: uniform or skewed\n");
        std::exit(2);
      }
      o.r = r == "uniform" ? l1_gemm::moe::routing::uniform : l1_gemm::moe::routing::skewed;
    } else if (a == "--experts") o.experts = examples_cli::parse_int(value(), "--experts");
    else if (a == "--reps") o.reps = std::max(1, examples_cli::parse_int(value(), "--reps"));
    else if (a == "--seed") o.seed = std::strtoull(value(), nullptr, 10);
    else if (!a.empty() && a[0] != '-') o.T = examples_cli::parse_int(a.c_str(), "T (tokens; the model is deepseek or gptoss)");
    else {
      std::fprintf(stderr, "usage: moe_l1 [deepseek|gptoss] [T] [--routing uniform|skewed] [--experts E] [--reps N] [--seed S]\n");
      std::exit(2);
    }
  }
  if (o.experts > 0) o.m.experts = o.experts;
  if (o.T < 1 || o.m.experts < o.m.top_k || o.m.experts > fp4fuse::gemm::sm90::max_groups) {
    std::fprintf(stderr, "need T >= 1 and top-k <= experts <= %d\n", fp4fuse::gemm::sm90::max_groups);
    std::exit(2);
  }
  return o;
}

template <class Launch>
double time_us(int reps, Launch&& launch) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  launch();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CHECK_CUDA(cudaEventRecord(a));
    launch();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f);
  }
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class Activation>
int run(const options& o, const Activation& act) {
  const l1_gemm::moe::model& m = o.m;
  const int E = m.experts, H = m.hidden, I = m.inter, N = 2 * I;
  const std::vector<std::int32_t> counts = l1_gemm::moe::route(o.T, E, m.top_k, o.r, o.seed);
  const std::vector<std::int32_t> offsets = l1_gemm::moe::offsets_of(counts);
  const int rows = offsets.back();
  int active = 0, largest = 0;
  for (int c : counts) {
    active += c > 0;
    largest = std::max(largest, c);
  }
  std::printf("MoE L1 %s: T=%d tokens, top-%d of %d experts (%s routing): %d routed rows, %d experts with tokens (largest %d), "
              "H=%d, I=%d%s, seed %llu\n",
              m.name, o.T, m.top_k, E, l1_gemm::moe::routing_name(o.r), rows, active, largest, H, I,
              m.bias ? ", bias, clamped SwiGLU" : ", SwiGLU", static_cast<unsigned long long>(o.seed));
  const l1_gemm::moe::values v{o.seed, H};
  const l1_gemm::moe::reference ref{v, H, I, m.bias};
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0 || !fp4fuse::gemm::detail::wgmma_runs_here()) {
    (void)cudaGetLastError();
    std::printf("No sm_90 GPU here (the grouped kernel is sm_90a): the host reference of the first routed rows only.\n");
    for (int r = 0; r < std::min(rows, 3); ++r) {
      const int e = static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), r) - offsets.begin()) - 1;
      const std::vector<float> h = ref.activation_row(r, e, act);
      std::printf("  row %d (expert %d): act(gate) * up [0..3] = %g %g %g %g\n", r, e, h[0], h[1], h[2], h[3]);
    }
    return 0;
  }
  // Device tensors.
  __nv_bfloat16 *x, *w, *gate_up, *h;
  float *bias = nullptr, *S;
  std::int32_t* d_offsets;
  std::uint8_t *packed, *scales, *dense_scales;
  const fp4fuse::gemm::moe::grouped_layout<start_t> host_layout{rows, I / 16, E, offsets.data()};
  const fp4fuse::scale_layout::swizzled_128x4 dense_layout{rows, I / 16};
  CHECK_CUDA(cudaMalloc(&x, std::size_t(rows) * H * 2 + 16));
  CHECK_CUDA(cudaMalloc(&w, std::size_t(E) * N * H * 2));
  CHECK_CUDA(cudaMalloc(&gate_up, std::size_t(rows) * N * 2 + 16));
  CHECK_CUDA(cudaMalloc(&h, std::size_t(rows) * I * 2 + 16));
  if (m.bias) CHECK_CUDA(cudaMalloc(&bias, std::size_t(E) * N * 4));
  CHECK_CUDA(cudaMalloc(&S, 4));
  CHECK_CUDA(cudaMalloc(&d_offsets, offsets.size() * 4));
  CHECK_CUDA(cudaMalloc(&packed, std::size_t(rows) * I / 2 + 16));
  CHECK_CUDA(cudaMalloc(&scales, static_cast<std::size_t>(host_layout.size_bytes())));
  CHECK_CUDA(cudaMalloc(&dense_scales, static_cast<std::size_t>(dense_layout.size_bytes())));
  CHECK_CUDA(l1_gemm::moe::fill_device(x, std::size_t(rows) * H, v, 0));
  CHECK_CUDA(l1_gemm::moe::fill_device(w, std::size_t(E) * N * H, v, 1));
  if (m.bias) CHECK_CUDA(l1_gemm::moe::fill_device(bias, std::size_t(E) * N, v, 2));
  CHECK_CUDA(cudaMemcpy(d_offsets, offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));

  const fp4fuse::gemm::moe::inputs in{{x, rows, H, H}, w, bias};
  // The static global encode scale, calibrated from flow 2's BF16 activations (as the dense example).
  check_result(fp4fuse::gemm::moe::run_swiglu_bf16(in, fp4fuse::matrix_view<__nv_bfloat16>{h, rows, I, I}, act, E, d_offsets), "flow 2 GEMM");
  float* d_amax;
  CHECK_CUDA(cudaMalloc(&d_amax, 4));
  check_result(fp4fuse::amax(fp4fuse::matrix_view<const __nv_bfloat16>{h, rows, I, I}, d_amax, fp4fuse::global_scale::per_tensor{S}), "amax");
  float S_host = 0;
  CHECK_CUDA(cudaMemcpy(&S_host, S, 4, cudaMemcpyDeviceToHost));

  fp4fuse::gemm::moe::grouped_output<start_t> out{packed, I / 2, scales, host_layout};
  out.layout.expert_offsets = d_offsets;
  const fp4fuse::global_scale::per_tensor gs{S};
  check_result(fp4fuse::gemm::moe::run_fused(in, out, gs, act), "flow 3 (fused grouped L1)");
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<std::uint8_t> got_packed(std::size_t(rows) * I / 2), got_scales(static_cast<std::size_t>(host_layout.size_bytes()));
  CHECK_CUDA(cudaMemcpy(got_packed.data(), packed, got_packed.size(), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(got_scales.data(), scales, got_scales.size(), cudaMemcpyDeviceToHost));

  // Sampled rows against float64: the first and last row of up to 8 experts with tokens.
  l1_gemm::moe::comparison cmp;
  int checked = 0;
  for (int e = 0; e < E && checked < 16; ++e) {
    if (counts[static_cast<std::size_t>(e)] == 0) continue;
    for (int r : {offsets[static_cast<std::size_t>(e)], offsets[static_cast<std::size_t>(e) + 1] - 1}) {
      ref.compare_row(cmp, got_packed, got_scales, host_layout, r, e, act, S_host);
      ++checked;
    }
  }
  const bool padding_zero = l1_gemm::moe::padding_is_zero(got_scales, host_layout);
  const bool ok = cmp.diff_fraction() < 0.005 && cmp.rel_rms() <= cmp.reference_rel_rms() * 1.02 + 1e-4 && padding_zero;

  // Times: the fused kernel; the grouped BF16 GEMM followed by the standalone kernel (dense scales).
  const fp4fuse::matrix_view<__nv_bfloat16> gu{gate_up, rows, N, N};
  const fp4fuse::quantized_matrix<fp4fuse::gemm::moe::format, fp4fuse::gemm::moe::layout> dense_out{packed, I / 2, dense_scales, dense_layout};
  const double t3 = time_us(o.reps, [&] { check_result(fp4fuse::gemm::moe::run_fused(in, out, gs, act), "flow 3"); });
  const double t1 = time_us(o.reps, [&] {
    check_result(fp4fuse::gemm::moe::run_bf16(in, gu, E, d_offsets), "flow 1 GEMM");
    check_result(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gu, dense_out, fp4fuse::global_scale::per_tensor{S}, act), "flow 1 swiglu_quantize");
  });
  const double nvfp4_bytes = double(rows) * I / 2 + double(host_layout.size_bytes());
  std::printf("\n| flow | time us | bytes written | codes differing from float64 | rel. RMS error (reference's own) | scale padding 0x00 |\n");
  std::printf("|---|---:|---:|---:|---:|---|\n");
  std::printf("| 1: grouped BF16 gate/up + swiglu_quantize | %.1f | %.0f | - | - | - |\n", t1, double(rows) * N * 2 + nvfp4_bytes);
  std::printf("| 3: fused grouped SwiGLU -> NVFP4 | %.1f | %.0f | %lld of %lld | %.4f (%.4f) | %s |\n", t3, nvfp4_bytes,
              static_cast<long long>(cmp.code_diffs), static_cast<long long>(cmp.codes), cmp.rel_rms(), cmp.reference_rel_rms(),
              padding_zero ? "yes" : "NO");
  std::printf("%s\n", ok ? "OK" : "FAILED: the fused grouped output differs from the reference beyond accumulation order");
  for (void* p : {static_cast<void*>(x), static_cast<void*>(w), static_cast<void*>(gate_up), static_cast<void*>(h), static_cast<void*>(bias),
                  static_cast<void*>(S), static_cast<void*>(d_offsets), static_cast<void*>(packed), static_cast<void*>(scales),
                  static_cast<void*>(dense_scales), static_cast<void*>(d_amax)})
    if (p != nullptr) CHECK_CUDA(cudaFree(p));
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  return o.m.bias ? run(o, fp4fuse::activation::swiglu_clamped{}) : run(o, fp4fuse::activation::swiglu{});
}
