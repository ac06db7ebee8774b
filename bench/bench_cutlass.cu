// The fp4fuse node in CUTLASS's sm90 dense GemmUniversal against the same CUTLASS GEMM writing
// BF16, cuBLASLt alone (BF16 out) and cuBLASLt + fp4fuse::swiglu_quantize: the MoE up/gate
// projection [T, H] x [2I, H]^T at DeepSeek-V3 (H = 7168, 2I = 4096) and GPT-OSS (H = 2880,
// 2I = 5760) shapes. Medians of round-robin runs, L2 flushed before each (bench/bench_support.cuh),
// random-normal X and W. Prediction: the node writes 1/4 of BF16's bytes (plus 1/16 for scales)
// and does its arithmetic in registers between wgmma tiles, so it costs at most a few percent
// over the BF16-out GEMM, and wins where the output store is a visible share (small H).
//
// The dense node GEMMs: cooperative 128x256 (cluster 2x1), ping-pong 64x256 and ping-pong 128x128
// (cluster 2x1), each against the same GEMM writing BF16; the cooperative one also with the
// hardware exp and reciprocal (activation::swiglu_fast), the ping-pong 64x256 with the output amax.
//
// Grouped (MoE): the ptr-array grouped GEMM with the node (its device-side problem setup from the
// experts' offsets included in the time): cooperative 128x256, with and without the output amax,
// ping-pong 128x128 and ping-pong 64x128 (torch._grouped_mm's configuration for small groups);
// the best of the three against our own
// grouped engine (fp4fuse::gemm::moe::run_fused, its plan chosen as bench_moe's is, on the same
// routed rows, weights and offsets, in the same round robin) and torch._grouped_mm (timed by
// bench/torch_grouped_mm.py on the same counts) + swiglu_quantize on its BF16 output. The node's
// and the engine's outputs are compared byte for byte (a count, not a test: the two mainloops'
// fp32 accumulators need not be bit-equal). Prediction for the amax: one warp max + one atomic per
// warp and epilogue subtile, next to 8 cvt-free E2M1 encodes per block: at most 1-2%.
//
// usage: bench_cutlass [--reps N] [--quick]                  the dense table
//        bench_cutlass --routings-out R.json                 writes the grouped configs (counts)
//        bench_cutlass --grouped R.json TORCH.json [--reps N] the grouped table
#include "bench_support.cuh"
#include "cublaslt_gemm.cuh"

// Our grouped engine before CUTLASS: CUTLASS's cuda_host_adapter.hpp includes <cudaTypedefs.h>
// inside namespace cutlass, so its include guard would hide the driver typedefs the engine's
// launcher names (PFN_cuTensorMapEncodeTiled_v12000) from the global namespace.
#include <fp4fuse/gemm/grouped.cuh>

#include "../tests/cutlass/sm90_gemms.cuh"

#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>

namespace bench_cutlass {

using namespace fp4fuse_cutlass_test;
using nvfp4 = fp4fuse::format::nvfp4<>;
using L = fp4fuse::scale_layout::swizzled_128x4;

using coop_node = sm90_gemm<cooperative, tile_128x256, cluster_2x1, 64, node_op<nvfp4>, void>;
using coop_bf16 = sm90_gemm<cooperative, tile_128x256, cluster_2x1, 64, lincomb<cutlass::bfloat16_t>, cutlass::bfloat16_t>;
using pp_node = sm90_gemm<pingpong, tile_64x256, cluster_1x1, 64, node_op<nvfp4>, void>;
// The cooperative node with the hardware exp and reciprocal (activation::swiglu_fast): how much of
// the cooperative schedule's exposed epilogue is the exact SwiGLU's exp and IEEE division.
using coop_fast = sm90_gemm<cooperative, tile_128x256, cluster_2x1, 64, fp4fuse::cutlass_ext::SwiGluQuantize<nvfp4, fp4fuse::activation::swiglu_fast>, void>;
using pp_bf16 = sm90_gemm<pingpong, tile_64x256, cluster_1x1, 64, lincomb<cutlass::bfloat16_t>, cutlass::bfloat16_t>;
// Ping-pong with 128 x 128 tiles (our engine's prefill tile): each consumer warp group's epilogue
// hides behind the other's mainloop, as with 64 x 256, with a mainloop closer to the cooperative
// 128 x 256 one's operand reuse. Prediction: node / bf16 <= 1.03 at T >= 4096 and a BF16 time
// between pp 64x256's and coop's, so that the best node moves toward cuBLASLt.
using pp128_node = sm90_gemm<pingpong, tile_128x128, cluster_2x1, 64, node_op<nvfp4>, void>;
using pp128_bf16 = sm90_gemm<pingpong, tile_128x128, cluster_2x1, 64, lincomb<cutlass::bfloat16_t>, cutlass::bfloat16_t>;

/// Standard-normal BF16 (Box-Muller on a hash of the index), times `scale`.
__global__ void fill_normal(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    auto hash = [](std::uint32_t h) {
      h ^= h >> 16;
      h *= 0x85EBCA6Bu;
      h ^= h >> 13;
      h *= 0xC2B2AE35u;
      h ^= h >> 16;
      return h;
    };
    const std::uint32_t a = hash(static_cast<std::uint32_t>(i) * 2u ^ seed), b = hash(static_cast<std::uint32_t>(i) * 2u + 1u ^ seed * 7u);
    const float u1 = (static_cast<float>(a >> 8) + 1.0f) * (1.0f / 16777216.0f), u2 = static_cast<float>(b >> 8) * (1.0f / 16777216.0f);
    p[i] = __float2bfloat16_rn(scale * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

/// A CUTLASS GEMM, initialised once, launched by `run`.
template <class G>
struct cutlass_launch {
  typename G::Gemm gemm;
  void* workspace = nullptr;
  explicit cutlass_launch(typename G::Gemm::Arguments args) {
    if (G::Gemm::can_implement(args) != cutlass::Status::kSuccess) {
      std::fprintf(stderr, "CUTLASS can_implement failed\n");
      std::exit(1);
    }
    CHECK_CUDA(cudaMalloc(&workspace, G::Gemm::get_workspace_size(args) + 16));
    if (gemm.initialize(args, workspace) != cutlass::Status::kSuccess) {
      std::fprintf(stderr, "CUTLASS initialize failed\n");
      std::exit(1);
    }
  }
  void run() {
    if (gemm.run() != cutlass::Status::kSuccess) {
      std::fprintf(stderr, "CUTLASS run failed\n");
      std::exit(1);
    }
  }
  ~cutlass_launch() {
    if (const cudaError_t e = cudaFree(workspace); e != cudaSuccess) std::fprintf(stderr, "cutlass_launch: cudaFree: %s\n", cudaGetErrorString(e));
  }
};

struct model {
  const char* name;
  int H, N;
};

using grouped_node = sm90_grouped_gemm<grouped_cooperative, tile_128x256, cluster_2x1, 64,
                                       grouped_node_op<nvfp4, fp4fuse::scale_layout::expert_start::offset_bound>>;
// The ping-pong 128 x 128 grouped GEMM: the epilogue hidden, as in the dense table; and ping-pong
// 64 x 128 in clusters of 2, torch._grouped_mm's own configuration for small groups.
using grouped_pp_node = sm90_grouped_gemm<grouped_pingpong, tile_128x128, cluster_2x1, 64,
                                          grouped_node_op<nvfp4, fp4fuse::scale_layout::expert_start::offset_bound>>;
using grouped_pp64_node = sm90_grouped_gemm<grouped_pingpong, tile_64x128, cluster_2x1, 64,
                                            grouped_node_op<nvfp4, fp4fuse::scale_layout::expert_start::offset_bound>>;
// The same grouped GEMMs writing BF16 gate/up (what torch._grouped_mm computes): how much of a node
// GEMM's time is its mainloop, next to torch's.
using grouped_coop_bf16 = sm90_grouped_gemm<grouped_cooperative, tile_128x256, cluster_2x1, 64, lincomb<cutlass::bfloat16_t>, cutlass::bfloat16_t>;
using grouped_pp_bf16 = sm90_grouped_gemm<grouped_pingpong, tile_128x128, cluster_2x1, 64, lincomb<cutlass::bfloat16_t>, cutlass::bfloat16_t>;

using grouped_out = fp4fuse::quantized_matrix<nvfp4, fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>>;

/// The node's fusion arguments: `out`, its encode scale, and the output amax (nullptr: none).
template <class G, class Out>
typename G::FusionArguments node_args(const Out& out, const float* d_S, float* d_amax = nullptr) {
  typename G::FusionArguments f{};
  f.out = out;
  f.encode_scale = d_S;
  f.amax = d_amax;
  return f;
}

/// CUTLASS's linear combination as a plain store of the accumulator: D = acc.
template <class G>
typename G::FusionArguments bf16_args() {
  typename G::FusionArguments f{};
  f.alpha = 1.0f;
  f.beta = 0.0f;
  return f;
}

/// What every grouped launch of a configuration shares: the experts' offsets (device), X, W, the shape.
struct grouped_rows {
  const int* d_offsets;
  int experts;
  const cutlass::bfloat16_t *x, *w;
  int N, K, sms;
};

/// One grouped GEMM G over `rows` (into D, rows' [T, N], for a BF16 GEMM): its device arrays,
/// filled from the offsets on the device by every `run`, as a user's launch would, and the launch.
template <class G>
struct grouped_run {
  typename G::device_problem p{};
  grouped_rows rows;
  typename G::D_t* d;
  std::unique_ptr<cutlass_launch<G>> gemm;

  grouped_run(const grouped_rows& r, const typename G::FusionArguments& f, typename G::D_t* D = nullptr) : rows(r), d(D) {
    const int E = rows.experts;
    CHECK_CUDA(cudaMalloc(&p.shapes, E * sizeof(*p.shapes)));
    CHECK_CUDA(cudaMalloc(&p.a, E * sizeof(*p.a)));
    CHECK_CUDA(cudaMalloc(&p.b, E * sizeof(*p.b)));
    CHECK_CUDA(cudaMalloc(&p.stride_a, E * sizeof(*p.stride_a)));
    CHECK_CUDA(cudaMalloc(&p.stride_b, E * sizeof(*p.stride_b)));
    CHECK_CUDA(cudaMalloc(&p.stride_c, E * sizeof(*p.stride_c)));
    CHECK_CUDA(cudaMalloc(&p.stride_d, E * sizeof(*p.stride_d)));
    if constexpr (G::has_d) CHECK_CUDA(cudaMalloc(&p.d, E * sizeof(*p.d)));
    fill();
    CHECK_CUDA(cudaDeviceSynchronize());
    gemm = std::make_unique<cutlass_launch<G>>(G::arguments(E, p, f, rows.sms));
  }
  grouped_run(const grouped_run&) = delete;
  grouped_run& operator=(const grouped_run&) = delete;
  ~grouped_run() {
    for (const void* q : {static_cast<const void*>(p.shapes), static_cast<const void*>(p.a), static_cast<const void*>(p.b),
                          static_cast<const void*>(p.stride_a), static_cast<const void*>(p.stride_b), static_cast<const void*>(p.stride_c),
                          static_cast<const void*>(p.stride_d), static_cast<const void*>(p.d)}) {
      if (const cudaError_t e = cudaFree(const_cast<void*>(q)); e != cudaSuccess) std::fprintf(stderr, "grouped_run: cudaFree: %s\n", cudaGetErrorString(e));
    }
  }
  void fill() const { make_grouped_problem<G><<<1, 64>>>(p, rows.d_offsets, rows.experts, rows.x, rows.w, rows.N, rows.K, d); }
  /// The problem setup and the GEMM: what a timed launch is.
  void run() const {
    fill();
    gemm->run();
  }
};

struct grouped_config {
  std::string name;
  int experts, H, N;
  std::vector<int> counts;
};

/// The grouped configurations: 32 local experts at each model's H and 2I, rows routed uniformly at random.
std::vector<grouped_config> grouped_configs() {
  std::vector<grouped_config> configs;
  std::mt19937_64 g(20261201);
  for (const model& m : {model{"DeepSeek-V3", 7168, 4096}, model{"GPT-OSS", 2880, 5760}}) {
    for (const int rows : {512, 4096, 32768}) {
      grouped_config c{std::string(m.name) + " E=32 rows=" + std::to_string(rows), 32, m.H, m.N, std::vector<int>(32, 0)};
      std::uniform_int_distribution<int> expert(0, 31);
      for (int r = 0; r < rows; ++r) ++c.counts[expert(g)];
      configs.push_back(c);
    }
  }
  return configs;
}

/// Every "grouped_mm_us": value of torch_grouped_mm.py's output, in order (-1 where it failed).
std::vector<double> torch_times(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  std::vector<double> t;
  for (std::size_t at = s.find("\"name\""); at != std::string::npos; at = s.find("\"name\"", at + 1)) {
    const std::size_t next = s.find("\"name\"", at + 1);
    const std::size_t k = s.find("\"grouped_mm_us\":", at);
    t.push_back(k != std::string::npos && k < next ? std::atof(s.c_str() + k + 16) : -1.0);
  }
  return t;
}

int run_grouped(const char* routings, const char* torch_json) {
  (void)routings;  // the same configs are regenerated (fixed seed); the file went to the torch side
  const std::vector<grouped_config> configs = grouped_configs();
  const std::vector<double> torch_us = torch_times(torch_json);
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("bench_cutlass grouped: medians of %d round-robin runs (L2 flushed), microseconds\n", bench::g_reps);
  std::printf("%-28s | %9s %9s %6s | %9s %9s | %9s %9s | %9s %10s | %9s %7s %11s | %10s | %s\n", "config", "node", "node+amax", "amax",
              "pp128", "pp64x128", "coop bf16", "pp128 bf16", "engine", "best/engine", "torch_gmm", "swq", "torch + swq", "best/t+swq", "bytes node != engine");
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const grouped_config& c = configs[i];
    const int E = c.experts, K = c.H, N = c.N, I = N / 2;
    std::vector<int> offsets(E + 1, 0);
    for (int e = 0; e < E; ++e) offsets[e + 1] = offsets[e] + c.counts[e];
    const int T = offsets[E];
    __nv_bfloat16 *x = nullptr, *w = nullptr, *d = nullptr;
    CHECK_CUDA(cudaMalloc(&x, std::size_t(T) * K * 2));
    CHECK_CUDA(cudaMalloc(&w, std::size_t(E) * N * K * 2));
    CHECK_CUDA(cudaMalloc(&d, std::size_t(T) * N * 2));
    fill_normal<<<1024, 256>>>(x, std::size_t(T) * K, 1234u, 1.0f);
    fill_normal<<<1024, 256>>>(w, std::size_t(E) * N * K, 99u, 1.0f / std::sqrt(static_cast<float>(K)));
    fill_normal<<<1024, 256>>>(d, std::size_t(T) * N, 7u, 1.0f);
    CHECK_CUDA(cudaGetLastError());
    int* d_offsets = nullptr;
    float* d_S = nullptr;
    CHECK_CUDA(cudaMalloc(&d_offsets, (E + 1) * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_offsets, offsets.data(), (E + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc(&d_S, sizeof(float)));
    const float S = 400.0f;
    CHECK_CUDA(cudaMemcpy(d_S, &S, sizeof S, cudaMemcpyHostToDevice));
    using GL = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
    const GL layout{T, I / 16, E, d_offsets};
    const L dense_layout{T, I / 16};
    std::uint8_t *packed = nullptr, *scales = nullptr;
    CHECK_CUDA(cudaMalloc(&packed, std::size_t(T) * I / 2));
    CHECK_CUDA(cudaMalloc(&scales, std::max(layout.size_bytes(), dense_layout.size_bytes())));
    auto cx = reinterpret_cast<const cutlass::bfloat16_t*>(x);
    auto cw = reinterpret_cast<const cutlass::bfloat16_t*>(w);
    const grouped_rows rows{d_offsets, E, cx, cw, N, K, sms};
    const grouped_out out{packed, I / 2, scales, layout};
    float* d_amax = nullptr;
    CHECK_CUDA(cudaMalloc(&d_amax, sizeof(float)));
    CHECK_CUDA(cudaMemset(d_amax, 0, sizeof(float)));
    const grouped_run<grouped_node> gn(rows, node_args<grouped_node>(out, d_S));
    // the same GEMM with the output amax (timing: its start value does not matter)
    const grouped_run<grouped_node> gna(rows, node_args<grouped_node>(out, d_S, d_amax));
    const grouped_run<grouped_pp_node> gpp(rows, node_args<grouped_pp_node>(out, d_S));
    const grouped_run<grouped_pp64_node> gpp64(rows, node_args<grouped_pp64_node>(out, d_S));
    auto cd = reinterpret_cast<cutlass::bfloat16_t*>(d);  // the BF16 references' D: [T, N], as torch's output
    const grouped_run<grouped_coop_bf16> gcb(rows, bf16_args<grouped_coop_bf16>(), cd);
    const grouped_run<grouped_pp_bf16> gppb(rows, bf16_args<grouped_pp_bf16>(), cd);
    // Our own grouped engine on the same rows, weights and offsets, into its own output.
    std::uint8_t *e_packed = nullptr, *e_scales = nullptr;
    CHECK_CUDA(cudaMalloc(&e_packed, std::size_t(T) * I / 2));
    CHECK_CUDA(cudaMalloc(&e_scales, layout.size_bytes()));
    const fp4fuse::gemm::moe::inputs engine_in{{x, T, K, K}, w, nullptr};
    const fp4fuse::gemm::moe::grouped_output<fp4fuse::scale_layout::expert_start::offset_bound> engine_out{e_packed, I / 2, e_scales, layout};
    const fp4fuse::global_scale::per_tensor gs{d_S};
    const fp4fuse::matrix_view<const __nv_bfloat16> gu{d, T, N, N};
    const fp4fuse::quantized_matrix<nvfp4, L> dense_out{packed, I / 2, scales, dense_layout};
    const std::vector<double> t = bench::time_round_robin({
        [&] { gn.run(); },
        [&] { gna.run(); },
        [&] { CHECK_FP4(fp4fuse::gemm::moe::run_fused(engine_in, engine_out, gs, fp4fuse::activation::swiglu{})); },
        [&] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gu, dense_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu{})); },
        [&] { gpp.run(); },
        [&] { gpp64.run(); },
        [&] { gcb.run(); },
        [&] { gppb.run(); },
    });
    const double best = std::min({t[0], t[4], t[5]});
    CHECK_CUDA(cudaDeviceSynchronize());
    // One more of each into zeroed scale tensors (the engine clears its own; the node leaves the
    // grouped layout's slack as it finds it), then every byte compared.
    CHECK_CUDA(cudaMemset(scales, 0, layout.size_bytes()));
    gn.run();
    CHECK_FP4(fp4fuse::gemm::moe::run_fused(engine_in, engine_out, gs, fp4fuse::activation::swiglu{}));
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::size_t packed_bytes = std::size_t(T) * I / 2, scale_bytes = layout.size_bytes();
    std::vector<std::uint8_t> a(packed_bytes + scale_bytes), b(packed_bytes + scale_bytes);
    CHECK_CUDA(cudaMemcpy(a.data(), packed, packed_bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(a.data() + packed_bytes, scales, scale_bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b.data(), e_packed, packed_bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b.data() + packed_bytes, e_scales, scale_bytes, cudaMemcpyDeviceToHost));
    std::size_t differ = 0;
    for (std::size_t k = 0; k < a.size(); ++k) differ += a[k] != b[k];
    const double torch_t = i < torch_us.size() ? torch_us[i] : -1.0;
    char torch_cols[64], ratio_col[16];
    if (torch_t > 0) {
      std::snprintf(torch_cols, sizeof torch_cols, "%9.1f %7.1f %11.1f", torch_t, t[3], torch_t + t[3]);
      std::snprintf(ratio_col, sizeof ratio_col, "%10.3f", best / (torch_t + t[3]));
    } else {
      std::snprintf(torch_cols, sizeof torch_cols, "%9s %7.1f %11s", "n/a", t[3], "n/a");
      std::snprintf(ratio_col, sizeof ratio_col, "%10s", "-");
    }
    std::printf("%-28s | %9.1f %9.1f %6.3f | %9.1f %9.1f | %9.1f %9.1f | %9.1f %10.3f | %s | %s | %zu of %zu\n", c.name.c_str(), t[0], t[1],
                t[1] / t[0], t[4], t[5], t[6], t[7], t[2], best / t[2], torch_cols, ratio_col, differ, a.size());
    std::fflush(stdout);
    CHECK_CUDA(cudaFree(d_amax));
    CHECK_CUDA(cudaFree(e_packed));
    CHECK_CUDA(cudaFree(e_scales));
    for (void* q : {static_cast<void*>(x), static_cast<void*>(w), static_cast<void*>(d), static_cast<void*>(d_offsets), static_cast<void*>(d_S),
                    static_cast<void*>(packed), static_cast<void*>(scales)}) {
      CHECK_CUDA(cudaFree(q));
    }
  }
  return 0;
}

}  // namespace bench_cutlass

using namespace bench_cutlass;

int main(int argc, char** argv) {
  if (!bench::have_device("bench_cutlass")) return 0;
  bool quick = false;
  const char* routings_out = nullptr;
  const char* grouped_routings = nullptr;
  const char* grouped_torch = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) bench::g_reps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--routings-out") && i + 1 < argc) routings_out = argv[++i];
    if (!std::strcmp(argv[i], "--grouped") && i + 2 < argc) {
      grouped_routings = argv[++i];
      grouped_torch = argv[++i];
    }
  }
  if (routings_out != nullptr) {  // the configs for torch_grouped_mm.py
    std::FILE* f = std::fopen(routings_out, "w");
    if (f == nullptr) return 1;
    std::fprintf(f, "{\"configs\": [");
    const auto configs = grouped_configs();
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const auto& c = configs[i];
      std::fprintf(f, "%s{\"name\": \"%s\", \"experts\": %d, \"hidden\": %d, \"n\": %d, \"counts\": [", i ? ", " : "", c.name.c_str(), c.experts,
                   c.H, c.N);
      for (std::size_t e = 0; e < c.counts.size(); ++e) std::fprintf(f, "%s%d", e ? ", " : "", c.counts[e]);
      std::fprintf(f, "]}");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
    return 0;
  }
  CHECK_CUDA(cudaMalloc(&bench::g_flush, bench::flush_bytes));
  if (grouped_routings != nullptr) return run_grouped(grouped_routings, grouped_torch);
  const model models[] = {{"DeepSeek-V3", 7168, 4096}, {"GPT-OSS", 2880, 5760}};
  std::vector<int> Ts = {64, 256, 1024, 4096, 16384, 32768};
  if (quick) Ts = {256, 4096};
  const int T_max = Ts.back();
  std::printf("bench_cutlass: medians of %d round-robin runs (L2 flushed), microseconds; node = fp4fuse SwiGLU->NVFP4 epilogue\n",
              bench::g_reps);
  std::printf("%-12s %6s | %9s %9s %7s | %9s %7s | %9s %9s %7s | %9s %7s | %9s %9s %7s | %9s %9s | %s\n", "model", "T", "coop", "coop bf16",
              "ratio", "coop fast", "ratio", "pp", "pp bf16", "ratio", "pp+amax", "amax", "pp128", "pp128 bf16", "ratio", "cublas", "cub+swq",
              "best node / cublas");
  for (const model& m : models) {
    const int K = m.H, N = m.N, I = N / 2;
    __nv_bfloat16 *x = nullptr, *w = nullptr, *d = nullptr;
    CHECK_CUDA(cudaMalloc(&x, std::size_t(T_max) * K * 2));
    CHECK_CUDA(cudaMalloc(&w, std::size_t(N) * K * 2));
    CHECK_CUDA(cudaMalloc(&d, std::size_t(T_max) * N * 2));
    fill_normal<<<1024, 256>>>(x, std::size_t(T_max) * K, 1234u, 1.0f);
    fill_normal<<<1024, 256>>>(w, std::size_t(N) * K, 99u, 1.0f / std::sqrt(static_cast<float>(K)));
    CHECK_CUDA(cudaGetLastError());
    float* d_S = nullptr;
    CHECK_CUDA(cudaMalloc(&d_S, sizeof(float)));
    const float S = 400.0f;
    CHECK_CUDA(cudaMemcpy(d_S, &S, sizeof S, cudaMemcpyHostToDevice));
    float* d_amax = nullptr;
    CHECK_CUDA(cudaMalloc(&d_amax, sizeof(float)));
    CHECK_CUDA(cudaMemset(d_amax, 0, sizeof(float)));
    for (const int T : Ts) {
      const L layout{T, I / 16};
      std::uint8_t *packed = nullptr, *scales = nullptr;
      CHECK_CUDA(cudaMalloc(&packed, std::size_t(T) * I / 2));
      CHECK_CUDA(cudaMalloc(&scales, layout.size_bytes()));
      const fp4fuse::quantized_matrix<nvfp4, L> out{packed, I / 2, scales, layout};
      auto cx = reinterpret_cast<const cutlass::bfloat16_t*>(x);
      auto cw = reinterpret_cast<const cutlass::bfloat16_t*>(w);
      cutlass_launch<coop_node> cn(coop_node::arguments(T, N, K, cx, cw, nullptr, node_args<coop_node>(out, d_S)));
      cutlass_launch<coop_bf16> cb(coop_bf16::arguments(T, N, K, cx, cw, d, bf16_args<coop_bf16>()));
      cutlass_launch<pp_node> pn(pp_node::arguments(T, N, K, cx, cw, nullptr, node_args<pp_node>(out, d_S)));
      cutlass_launch<pp_bf16> pb(pp_bf16::arguments(T, N, K, cx, cw, d, bf16_args<pp_bf16>()));
      // the ping-pong node with the output amax
      cutlass_launch<pp_node> pna(pp_node::arguments(T, N, K, cx, cw, nullptr, node_args<pp_node>(out, d_S, d_amax)));
      cutlass_launch<coop_fast> cf(coop_fast::arguments(T, N, K, cx, cw, nullptr, node_args<coop_fast>(out, d_S)));
      cutlass_launch<pp128_node> qn(pp128_node::arguments(T, N, K, cx, cw, nullptr, node_args<pp128_node>(out, d_S)));
      cutlass_launch<pp128_bf16> qb(pp128_bf16::arguments(T, N, K, cx, cw, d, bf16_args<pp128_bf16>()));
      bench::cublas_gemm cublas(x, w, d, T, N, K);
      const fp4fuse::matrix_view<const __nv_bfloat16> gu{d, T, N, N};
      const std::vector<double> t = bench::time_round_robin({
          [&] { cn.run(); },
          [&] { cb.run(); },
          [&] { pn.run(); },
          [&] { pb.run(); },
          [&] { cublas.run(x, w, d); },
          [&] {
            cublas.run(x, w, d);
            CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gu, out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu{}));
          },
          [&] { pna.run(); },
          [&] { cf.run(); },
          [&] { qn.run(); },
          [&] { qb.run(); },
      });
      CHECK_CUDA(cudaDeviceSynchronize());
      const double best_node = std::min({t[0], t[2], t[8]});
      std::printf("%-12s %6d | %9.1f %9.1f %7.3f | %9.1f %7.3f | %9.1f %9.1f %7.3f | %9.1f %7.3f | %9.1f %9.1f %7.3f | %9.1f %9.1f | %.3f\n", m.name,
                  T, t[0], t[1], t[0] / t[1], t[7], t[7] / t[1], t[2], t[3], t[2] / t[3], t[6], t[6] / t[2], t[8], t[9], t[8] / t[9], t[4], t[5],
                  best_node / t[4]);
      std::fflush(stdout);
      CHECK_CUDA(cudaFree(packed));
      CHECK_CUDA(cudaFree(scales));
    }
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFree(d_S));
    CHECK_CUDA(cudaFree(d_amax));
  }
  return 0;
}
