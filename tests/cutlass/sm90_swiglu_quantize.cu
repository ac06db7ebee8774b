// The fp4fuse node in CUTLASS's sm90 GemmUniversal (cooperative and ping-pong): the same GEMM
// writing fp32 D, then fp4fuse::swiglu_quantize on that D, must give the node's packed bytes and
// scales bit for bit (every byte, padding included: the two outputs are poisoned with different
// bytes first), and the node's output amax must equal the host's max |act(gate) * up| of D.
// Random-normal X and W; the seed is printed by main.
#include "../test_support.hpp"
#include "sm90_gemms.cuh"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "fp4fuse/kernels/swiglu_quantize.cuh"

namespace sm90_node_test {

using namespace fp4fuse_cutlass_test;
using fp4fuse_test::rng;

template <class T>
struct device_buffer {
  T* p = nullptr;
  std::size_t n = 0;
  explicit device_buffer(std::size_t count) : n(count) { FP4FUSE_TEST_CUDA(cudaMalloc(&p, count * sizeof(T) + 16)); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  std::vector<T> host() const {
    std::vector<T> h(n);
    FP4FUSE_TEST_CUDA(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  void upload(const std::vector<T>& h) { FP4FUSE_TEST_CUDA(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice)); }
};

template <class G>
void run_gemm(typename G::Gemm::Arguments args) {
  typename G::Gemm gemm;
  REQUIRE(G::Gemm::can_implement(args) == cutlass::Status::kSuccess);
  const std::size_t ws = G::Gemm::get_workspace_size(args);
  device_buffer<std::uint8_t> workspace(ws + 1);
  REQUIRE(gemm.initialize(args, workspace.p) == cutlass::Status::kSuccess);
  REQUIRE(gemm.run() == cutlass::Status::kSuccess);
  FP4FUSE_TEST_LAUNCHED();
}

/// One shape through the node GEMM `Node` and the fp32 reference GEMM `Ref` (same tiles, same
/// schedule); returns after REQUIREing every byte equal.
template <class Format, class Node, class Ref>
void check_shape(int M, int N, int K, bool with_bias, const char* name) {
  using L = fp4fuse::scale_layout::swizzled_128x4;
  constexpr bool nvfp4 = fp4fuse::detail::is_nvfp4<Format>;
  const int I = N / 2;
  INFO(name << ": M = " << M << ", N = 2I = " << N << ", K = " << K << (with_bias ? ", bias" : ""));
  auto g = rng(name);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<cutlass::bfloat16_t> x(std::size_t(M) * K), w(std::size_t(N) * K);
  for (auto& v : x) v = cutlass::bfloat16_t(normal(g));
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(K));
  for (auto& v : w) v = cutlass::bfloat16_t(normal(g) * w_scale * 3.0f);
  std::vector<float> bias(N);
  for (auto& v : bias) v = normal(g);
  device_buffer<cutlass::bfloat16_t> d_x(x.size()), d_w(w.size());
  d_x.upload(x);
  d_w.upload(w);
  device_buffer<float> d_bias(N);
  d_bias.upload(bias);
  // S: any positive value works for the comparison; a random one near the usual 6 * 448 / amax.
  std::uniform_real_distribution<float> s_dist(100.0f, 1000.0f);
  device_buffer<float> d_S(1);
  d_S.upload({s_dist(g)});

  const L layout{M, I / Format::block_size};
  const std::int64_t ld_packed = I / 2;
  device_buffer<std::uint8_t> node_packed(std::size_t(M) * ld_packed), ref_packed(std::size_t(M) * ld_packed);
  device_buffer<std::uint8_t> node_scales(layout.size_bytes()), ref_scales(layout.size_bytes());
  FP4FUSE_TEST_CUDA(cudaMemset(node_packed.p, 0xA5, node_packed.n));
  FP4FUSE_TEST_CUDA(cudaMemset(node_scales.p, 0xA5, node_scales.n));
  FP4FUSE_TEST_CUDA(cudaMemset(ref_packed.p, 0x5A, ref_packed.n));
  FP4FUSE_TEST_CUDA(cudaMemset(ref_scales.p, 0x5A, ref_scales.n));
  device_buffer<float> d_amax(1);
  FP4FUSE_TEST_CUDA(cudaMemset(d_amax.p, 0, sizeof(float)));

  // The node.
  const fp4fuse::quantized_matrix<Format, L> node_out{node_packed.p, ld_packed, node_scales.p, layout};
  typename Node::FusionArguments fusion{};
  fusion.out = node_out;
  fusion.encode_scale = nvfp4 ? d_S.p : nullptr;
  fusion.bias = with_bias ? d_bias.p : nullptr;
  fusion.amax = d_amax.p;
  run_gemm<Node>(Node::arguments(M, N, K, d_x.p, d_w.p, nullptr, fusion));

  // The reference: the same GEMM's fp32 D (+ bias, fp32, on the host), then swiglu_quantize.
  device_buffer<float> d_D(std::size_t(M) * N);
  FP4FUSE_TEST_CUDA(cudaMemset(d_D.p, 0xFF, d_D.n * sizeof(float)));  // NaN: an unwritten D shows
  typename Ref::FusionArguments ref_fusion{};
  ref_fusion.alpha = 1.0f;
  ref_fusion.beta = 0.0f;
  run_gemm<Ref>(Ref::arguments(M, N, K, d_x.p, d_w.p, d_D.p, ref_fusion));
  std::vector<float> D = d_D.host();
  if (with_bias) {
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) D[std::size_t(r) * N + c] += bias[c];
    d_D.upload(D);
  }
  const fp4fuse::quantized_matrix<Format, L> ref_out{ref_packed.p, ld_packed, ref_scales.p, layout};
  const fp4fuse::matrix_view<const float> gate_up{d_D.p, M, N, N};
  fp4fuse::result r;
  if constexpr (fp4fuse::detail::is_nvfp4<Format>) {
    r = fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gate_up, ref_out, fp4fuse::global_scale::per_tensor{d_S.p},
                                                                   fp4fuse::activation::swiglu{});
  } else {
    r = fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(gate_up, ref_out, fp4fuse::global_scale::none{}, fp4fuse::activation::swiglu{});
  }
  INFO(r.message());
  REQUIRE(static_cast<bool>(r));
  FP4FUSE_TEST_LAUNCHED();

  // Every byte.
  const auto np = node_packed.host(), rp = ref_packed.host(), ns = node_scales.host(), rs = ref_scales.host();
  std::size_t bad_packed = 0, bad_scales = 0;
  for (std::size_t i = 0; i < np.size(); ++i) {
    if (np[i] != rp[i] && bad_packed++ < 5) UNSCOPED_INFO("packed byte " << i << " (row " << i / ld_packed << "): node " << int(np[i]) << " ref " << int(rp[i]));
  }
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] != rs[i] && bad_scales++ < 5) UNSCOPED_INFO("scale byte " << i << ": node " << int(ns[i]) << " ref " << int(rs[i]));
  }
  CHECK(bad_packed == 0);
  CHECK(bad_scales == 0);
  // Not all-equal-by-accident: the output holds non-zero codes.
  std::size_t nonzero = 0;
  for (auto b : np) nonzero += b != 0;
  CHECK(nonzero > np.size() / 2);

  // The output amax against the host's activations of the same (biased) D.
  float want = 0.0f;
  const fp4fuse::activation::swiglu act{};
  for (int row = 0; row < M; ++row) {
    for (int c = 0; c < I; ++c) {
      const std::size_t base = std::size_t(row) * N + 16 * (c / 8) + c % 8;
      const float h = act.apply(D[base], D[base + 8]);
      if (std::fabs(h) > want) want = std::fabs(h);
    }
  }
  const float got = d_amax.host()[0];
  CHECK(fp4fuse_test::bits_of(got) == fp4fuse_test::bits_of(want));
  std::printf("%s M=%d N=%d K=%d%s: %zu packed + %zu scale bytes identical, amax %g\n", name, M, N, K, with_bias ? " bias" : "",
              np.size() - bad_packed, ns.size() - bad_scales, static_cast<double>(got));
}

using nvfp4 = fp4fuse::format::nvfp4<>;
using mxfp4 = fp4fuse::format::mxfp4<>;

using coop_node = sm90_gemm<cooperative, tile_128x256, cluster_2x1, 64, node_op<nvfp4>, void>;
using coop_ref = sm90_gemm<cooperative, tile_128x256, cluster_2x1, 64, lincomb<float>, float>;
using coop_mx_node = sm90_gemm<cooperative, tile_128x256, cluster_2x1, 64, node_op<mxfp4>, void>;
using pp_node = sm90_gemm<pingpong, tile_64x256, cluster_1x1, 64, node_op<nvfp4>, void>;
using pp_ref = sm90_gemm<pingpong, tile_64x256, cluster_1x1, 64, lincomb<float>, float>;
// Ping-pong with 128-row tiles: each consumer warp group's tile is two 64-row epilogue subtiles.
using pp128_node = sm90_gemm<pingpong, tile_128x128, cluster_2x1, 64, node_op<nvfp4>, void>;
using pp128_ref = sm90_gemm<pingpong, tile_128x128, cluster_2x1, 64, lincomb<float>, float>;
// Ping-pong 64x128 in clusters of 2: torch._grouped_mm's configuration for small groups.
using pp64_node = sm90_gemm<pingpong, tile_64x128, cluster_2x1, 64, node_op<nvfp4>, void>;
using pp64_ref = sm90_gemm<pingpong, tile_64x128, cluster_2x1, 64, lincomb<float>, float>;

struct problem {
  int M, N, K;
  bool bias;
};
// M: below one tile, not a multiple of 64/128, several tiles and an odd tile count (cluster 2x1);
// N: whole tiles, a partial last tile, one not a multiple of 128 (scale padding columns).
const problem problems[] = {{1, 512, 64, false},   {100, 768, 256, false}, {128, 512, 520, true},
                        {300, 1056, 1024, false}, {1000, 4096, 512, true}, {2048, 2880 * 2, 256, false}};

}  // namespace sm90_node_test

using namespace sm90_node_test;

TEST_CASE("cutlass sm90 cooperative: node == fp32 D + swiglu_quantize (NVFP4)", "[gpu]") {
  for (const problem& s : problems) check_shape<nvfp4, coop_node, coop_ref>(s.M, s.N, s.K, s.bias, "cooperative nvfp4");
}

TEST_CASE("cutlass sm90 cooperative: node == fp32 D + swiglu_quantize (MXFP4)", "[gpu]") {
  for (const problem& s : problems) {
    if (s.N % 64 == 0) check_shape<mxfp4, coop_mx_node, coop_ref>(s.M, s.N, s.K, s.bias, "cooperative mxfp4");
  }
}

TEST_CASE("cutlass sm90 ping-pong: node == fp32 D + swiglu_quantize (NVFP4)", "[gpu]") {
  for (const problem& s : problems) check_shape<nvfp4, pp_node, pp_ref>(s.M, s.N, s.K, s.bias, "pingpong nvfp4");
  for (const problem& s : problems) check_shape<nvfp4, pp128_node, pp128_ref>(s.M, s.N, s.K, s.bias, "pingpong 128x128 nvfp4");
  for (const problem& s : problems) check_shape<nvfp4, pp64_node, pp64_ref>(s.M, s.N, s.K, s.bias, "pingpong 64x128 nvfp4");
}

TEST_CASE("cutlass sm90: can_implement names the argument that does not fit", "[cutlass]") {
  using Op = node_op<nvfp4>;
  using L = fp4fuse::scale_layout::swizzled_128x4;
  std::uint8_t byte_storage[16];
  const float S = 1.0f;
  fp4fuse::cutlass_ext::SwiGluQuantizeArguments<Op> a{};
  a.out = {byte_storage, 64, byte_storage, L{128, 8}};
  a.encode_scale = &S;
  using namespace fp4fuse::cutlass_ext::detail;
  CHECK(problem_error<Op>(128, 256, 1, a) == nullptr);
  CHECK(problem_error<Op>(128, 240, 1, a) != nullptr);  // N not whole blocks of I
  CHECK(problem_error<Op>(127, 256, 1, a) != nullptr);  // layout rows != M
  CHECK(problem_error<Op>(128, 512, 1, a) != nullptr);  // layout cols != N / 2
  CHECK(problem_error<Op>(128, 256, 2, a) != nullptr);  // batched
  a.encode_scale = nullptr;
  CHECK(problem_error<Op>(128, 256, 1, a) != nullptr);  // NVFP4 without S
  a.encode_scale = &S;
  a.out.ld_packed = 60;
  CHECK(problem_error<Op>(128, 256, 1, a) != nullptr);  // ld not a whole number of 8-byte blocks
  // The GEMM's own can_implement goes through the node's.
  coop_node::FusionArguments fusion{};
  fusion.out = {nullptr, 64, nullptr, L{128, 8}};
  fusion.encode_scale = &S;
  const auto args = coop_node::arguments(128, 256, 64, nullptr, nullptr, nullptr, fusion);
  CHECK(coop_node::Gemm::can_implement(args) != cutlass::Status::kSuccess);
}

// The ptr-array grouped GEMM: group e = expert e, the offsets only in device memory (the problem
// shapes and pointers are filled on the device from them). Each expert's packed rows and scale
// block must equal the dense node GEMM's output for that expert alone, byte for byte (its padding
// included); scale bytes outside every expert's block (the layout's slack) stay untouched.
namespace sm90_node_test {

// Each grouped GEMM is compared with the dense node of the same schedule and tile (the same fp32
// accumulators by construction).
template <class ExpertStart>
using grouped_coop = sm90_grouped_gemm<grouped_cooperative, tile_128x256, cluster_2x1, 64, grouped_node_op<nvfp4, ExpertStart>>;
template <class ExpertStart>
using grouped_pp128 = sm90_grouped_gemm<grouped_pingpong, tile_128x128, cluster_2x1, 64, grouped_node_op<nvfp4, ExpertStart>>;
template <class ExpertStart>
using grouped_pp64 = sm90_grouped_gemm<grouped_pingpong, tile_64x128, cluster_2x1, 64, grouped_node_op<nvfp4, ExpertStart>>;

template <template <class> class Grouped, class Dense, class ExpertStart>
void check_grouped(const std::vector<int>& counts, int N, int K, bool per_expert, const char* name) {
  using G = Grouped<ExpertStart>;
  using GL = fp4fuse::scale_layout::grouped_swizzled_128x4<ExpertStart>;
  using L = fp4fuse::scale_layout::swizzled_128x4;
  const int E = static_cast<int>(counts.size()), I = N / 2;
  std::vector<int> offsets(E + 1, 0);
  for (int e = 0; e < E; ++e) offsets[e + 1] = offsets[e] + counts[e];
  const int T = offsets[E];
  INFO(name << ": " << E << " experts, " << T << " rows, N = " << N << ", K = " << K << (per_expert ? ", per-expert S and bias" : ""));
  auto g = rng(name);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<cutlass::bfloat16_t> x(std::size_t(std::max(T, 1)) * K), w(std::size_t(E) * N * K);
  for (auto& v : x) v = cutlass::bfloat16_t(normal(g));
  const float w_scale = 3.0f / std::sqrt(static_cast<float>(K));
  for (auto& v : w) v = cutlass::bfloat16_t(normal(g) * w_scale);
  std::vector<float> bias(std::size_t(E) * N), S(E);
  for (auto& v : bias) v = normal(g);
  std::uniform_real_distribution<float> s_dist(100.0f, 1000.0f);
  for (auto& v : S) v = s_dist(g);
  device_buffer<cutlass::bfloat16_t> d_x(x.size()), d_w(w.size());
  d_x.upload(x);
  d_w.upload(w);
  device_buffer<float> d_bias(bias.size()), d_S(S.size());
  d_bias.upload(bias);
  d_S.upload(S);
  device_buffer<int> d_offsets(E + 1);
  d_offsets.upload(offsets);

  const GL layout{T, I / 16, E, d_offsets.p};
  const std::int64_t ld = I / 2;
  device_buffer<std::uint8_t> packed(std::size_t(std::max(T, 1)) * ld), scales(layout.size_bytes());
  FP4FUSE_TEST_CUDA(cudaMemset(packed.p, 0xA5, packed.n));
  FP4FUSE_TEST_CUDA(cudaMemset(scales.p, 0xA5, scales.n));
  device_buffer<float> d_amax(1);
  FP4FUSE_TEST_CUDA(cudaMemset(d_amax.p, 0, sizeof(float)));

  typename G::device_problem p{};
  device_buffer<typename G::ProblemShape::UnderlyingProblemShape> shapes(E);
  device_buffer<const cutlass::bfloat16_t*> pa(E), pb(E);
  device_buffer<typename G::StrideA> sa(E);
  device_buffer<typename G::StrideB> sb(E);
  device_buffer<typename G::StrideC> sc(E);
  device_buffer<typename G::StrideD> sd(E);
  p = {shapes.p, pa.p, pb.p, sa.p, sb.p, sc.p, sd.p};
  make_grouped_problem<G><<<1, 64>>>(p, d_offsets.p, E, d_x.p, d_w.p, N, K);
  FP4FUSE_TEST_LAUNCHED();
  typename G::FusionArguments fusion{};
  fusion.out = {packed.p, ld, scales.p, layout};
  fusion.encode_scale = d_S.p;
  fusion.encode_scale_group_stride = per_expert ? 1 : 0;
  fusion.bias = per_expert ? d_bias.p : nullptr;
  fusion.bias_group_stride = per_expert ? N : 0;
  fusion.amax = d_amax.p;
  int sms = 0;
  FP4FUSE_TEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  run_gemm<G>(G::arguments(E, p, fusion, sms));

  const auto got_packed = packed.host(), got_scales = scales.host();
  const float got_amax = d_amax.host()[0];
  std::vector<bool> in_band(got_scales.size(), false);
  const GL host_layout{T, I / 16, E, offsets.data()};
  float want_amax = 0.0f;
  std::size_t compared = 0, bad = 0;
  for (int e = 0; e < E; ++e) {
    const int M = counts[e];
    if (M == 0) continue;
    // The dense node GEMM on expert e alone.
    const L dl{M, I / 16};
    device_buffer<std::uint8_t> dp(std::size_t(M) * ld), ds(dl.size_bytes());
    FP4FUSE_TEST_CUDA(cudaMemset(dp.p, 0x5A, dp.n));
    FP4FUSE_TEST_CUDA(cudaMemset(ds.p, 0x5A, ds.n));
    device_buffer<float> da(1);
    FP4FUSE_TEST_CUDA(cudaMemset(da.p, 0, sizeof(float)));
    typename Dense::FusionArguments df{};
    df.out = {dp.p, ld, ds.p, dl};
    df.encode_scale = d_S.p + (per_expert ? e : 0);
    df.bias = per_expert ? d_bias.p + std::size_t(e) * N : nullptr;
    df.amax = da.p;
    run_gemm<Dense>(Dense::arguments(M, N, K, d_x.p + std::size_t(offsets[e]) * K, d_w.p + std::size_t(e) * N * K, nullptr, df));
    const auto want_packed = dp.host(), want_scales = ds.host();
    want_amax = std::max(want_amax, da.host()[0]);
    for (std::size_t i = 0; i < want_packed.size(); ++i, ++compared) {
      if (got_packed[std::size_t(offsets[e]) * ld + i] != want_packed[i] && bad++ < 5) UNSCOPED_INFO("expert " << e << " packed byte " << i);
    }
    const auto block = host_layout.expert(e);
    const std::size_t base = std::size_t(block.start_row) * host_layout.padded_cols();
    for (std::size_t i = 0; i < want_scales.size(); ++i, ++compared) {
      in_band[base + i] = true;
      if (got_scales[base + i] != want_scales[i] && bad++ < 5) UNSCOPED_INFO("expert " << e << " scale byte " << i);
    }
  }
  std::size_t slack = 0, slack_written = 0;
  for (std::size_t i = 0; i < got_scales.size(); ++i) {
    if (!in_band[i]) {
      ++slack;
      slack_written += got_scales[i] != 0xA5;
    }
  }
  CHECK(bad == 0);
  CHECK(slack_written == 0);
  CHECK(fp4fuse_test::bits_of(got_amax) == fp4fuse_test::bits_of(want_amax));
  std::printf("%s: %d experts, T=%d N=%d K=%d: %zu bytes identical to the dense node per expert, %zu slack scale bytes untouched, amax %g\n",
              name, E, T, N, K, compared - bad, slack - slack_written, static_cast<double>(got_amax));
}

}  // namespace sm90_node_test

TEST_CASE("cutlass sm90 ptr-array grouped: each expert == the dense node on that expert", "[gpu]") {
  using namespace fp4fuse::scale_layout::expert_start;
  const std::vector<int> edges = {0, 1, 127, 128, 129, 300, 15, 256, 0, 64};
  check_grouped<grouped_coop, coop_node, padded_prefix_sum>(edges, 768, 256, false, "grouped padded_prefix_sum");
  check_grouped<grouped_coop, coop_node, offset_bound>(edges, 768, 256, true, "grouped offset_bound");
  auto g = rng("grouped routing");
  std::vector<int> skewed(16);
  std::uniform_int_distribution<int> count(0, 400);
  for (auto& c : skewed) c = count(g);
  check_grouped<grouped_coop, coop_node, offset_bound>(skewed, 4096, 512, false, "grouped offset_bound DeepSeek-V3 N");
  check_grouped<grouped_coop, coop_node, padded_prefix_sum>(skewed, 2880 * 2, 512, true, "grouped padded_prefix_sum GPT-OSS N");
}

TEST_CASE("cutlass sm90 ptr-array grouped ping-pong: each expert == the dense ping-pong node of the same tile on that expert", "[gpu]") {
  using namespace fp4fuse::scale_layout::expert_start;
  const std::vector<int> edges = {0, 1, 127, 128, 129, 300, 15, 256, 0, 64};
  check_grouped<grouped_pp128, pp128_node, offset_bound>(edges, 768, 256, true, "grouped ping-pong offset_bound");
  auto g = rng("grouped ping-pong routing");
  std::vector<int> skewed(16);
  std::uniform_int_distribution<int> count(0, 400);
  for (auto& c : skewed) c = count(g);
  check_grouped<grouped_pp128, pp128_node, padded_prefix_sum>(skewed, 4096, 512, false, "grouped ping-pong padded_prefix_sum DeepSeek-V3 N");
  check_grouped<grouped_pp128, pp128_node, offset_bound>(skewed, 2880 * 2, 512, true, "grouped ping-pong offset_bound GPT-OSS N");
  check_grouped<grouped_pp64, pp64_node, padded_prefix_sum>(edges, 768, 256, false, "grouped ping-pong 64x128 padded_prefix_sum");
  check_grouped<grouped_pp64, pp64_node, offset_bound>(skewed, 2880 * 2, 512, true, "grouped ping-pong 64x128 offset_bound GPT-OSS N");
}
