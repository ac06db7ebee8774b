// The dense GEMM (include/fp4fuse/gemm/dense.cuh) through the L1 example's three flows, on both
// engines: flow 3 with the BF16 intermediate is bit-identical to flow 2 + quantize; the fp32 flow 3
// against a float64 reference (fraction of differing codes and dequantization error, both
// bounded); flow 1's BF16 output and its swiglu_quantize; every output byte written (two poisons),
// scale padding 0x00, guard zones intact; edges T = 1, T % 128 != 0, I % 64 != 0, H % 64 != 0;
// invalid arguments refused. The planner and the split-K workspace sizes: tests/gemm/sm90/.
#include "../../examples/l1_gemm/l1_gemm.cuh"
#include "../../examples/l1_gemm/reference.hpp"
#include "../kernels/kernel_test_support.cuh"

#include <unistd.h>  // dup, dup2: the launcher's verbose line read back

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace fp4fuse_test;
using act_t = fp4fuse::activation::swiglu;

TEST_CASE("dense L1 GEMM: the host emulation of the fragment epilogue equals the host codec", "[gemm][dense]") {
  for (auto [T, I] : {std::pair{1, 16}, {37, 80}, {130, 208}}) {
    auto g = rng("l1 host emulation");
    std::normal_distribution<float> n(0.0f, 2.0f);
    std::vector<float> gu(static_cast<std::size_t>(T) * 2 * I);
    for (auto& v : gu) v = n(g);
    float amax = 0;
    std::vector<std::vector<float>> h(static_cast<std::size_t>(T), std::vector<float>(static_cast<std::size_t>(I)));
    for (int r = 0; r < T; ++r)
      for (int c = 0; c < I; ++c) {
        const std::size_t base = static_cast<std::size_t>(r) * 2 * I;
        h[r][c] = act_t{}.apply(gu[base + l1_gemm::host::interleave::gate_col(c, I)], gu[base + l1_gemm::host::interleave::up_col(c, I)]);
        amax = std::max(amax, std::fabs(h[r][c]));
      }
    const float S = fp4fuse::nvfp4_global_encode_scale(amax);
    std::vector<std::uint8_t> packed, scales;
    l1_gemm::host::emulate_fragment_epilogue(gu, T, I, act_t{}, S, packed, scales);
    const l1_gemm::host::scale_layout layout{T, I / 16};
    for (int r = 0; r < T; ++r) {
      const l1_gemm::host::quantized_row want = l1_gemm::host::quantize_row(h[r], S);
      INFO("T=" << T << " I=" << I << " row " << r);
      REQUIRE(std::equal(want.packed.begin(), want.packed.end(), packed.begin() + static_cast<std::ptrdiff_t>(r) * (I / 2)));
      for (int b = 0; b < I / 16; ++b) REQUIRE(scales[static_cast<std::size_t>(layout.offset(r, b))] == want.scales[b]);
    }
    for (std::int64_t r = 0; r < layout.padded_rows(); ++r)
      for (std::int64_t b = 0; b < layout.padded_cols(); ++b)
        if (layout.is_padding(r, b)) REQUIRE(scales[static_cast<std::size_t>(layout.offset(r, b))] == 0);
  }
}

TEST_CASE("dense L1 GEMM: invalid arguments are refused before any CUDA call", "[gemm][dense]") {
  // Fake, aligned, never dereferenced pointers: every case below fails validation, which runs on
  // the host before the engine is resolved or anything is launched (so this runs without a GPU).
  const auto fake = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  l1_gemm::problem good{static_cast<const __nv_bfloat16*>(fake(0x100000)), static_cast<const __nv_bfloat16*>(fake(0x200000)),
                        64, 128, 64, static_cast<__nv_bfloat16*>(fake(0x300000)), static_cast<__nv_bfloat16*>(fake(0x400000)),
                        static_cast<std::uint8_t*>(fake(0x500000)), static_cast<std::uint8_t*>(fake(0x600000)),
                        static_cast<const float*>(fake(0x700000))};
  using fp4fuse::status;
  const auto all_flows = [&](const l1_gemm::problem& a, status want, const fp4fuse::gemm::sm90::launch_plan* plan = nullptr) {
    CHECK(l1_gemm::run(a, l1_gemm::flow::interleaved_bf16{}, act_t{}, fp4fuse::gemm::engine::automatic, nullptr, plan).code == want);
    CHECK(l1_gemm::run(a, l1_gemm::flow::compact_bf16{}, act_t{}, fp4fuse::gemm::engine::automatic, nullptr, plan).code == want);
    CHECK(l1_gemm::run(a, l1_gemm::flow::fused_nvfp4<>{}, act_t{}, fp4fuse::gemm::engine::wgmma, nullptr, plan).code == want);
  };
  l1_gemm::problem a = good;
  a.x = nullptr;
  all_flows(a, status::null_pointer);
  a = good;
  a.x = static_cast<const __nv_bfloat16*>(fake(0x100008));
  all_flows(a, status::misaligned_pointer);
  a = good;
  a.global_encode_scale = static_cast<const float*>(fake(0x700002));
  all_flows(a, status::misaligned_pointer);
  a = good;
  a.H = 4;
  all_flows(a, status::bad_shape);
  a = good;
  a.T = -3;
  all_flows(a, status::bad_shape);
  a = good;
  a.I = 24;
  all_flows(a, status::not_multiple_of_block);
  a = good;
  a.T = 1 << 30;
  a.I = 1 << 20;  // T x I beyond 2^40
  all_flows(a, status::bad_shape);
  // Forced plans that name no kernel.
  for (const fp4fuse::gemm::sm90::launch_plan& bad : {fp4fuse::gemm::sm90::launch_plan{64, 1, 0, 1, 0}, {256, 0, 0, 1, 0}, {256, 17, 0, 1, 0},
                                                {256, 2, 0, 2, 0}, {256, 1, 0, 3, 0}, {256, 1, 0, 1, 1}, {128, 2, 0, 1, 1},
                                                {128, 1, 0, 1, 1, 3}, {256, 1, 0, 1, 1, 0, 64}, {64, 1, 0, 1, 0, 0, 128},
                                                {128, 1, 0, 1, 1, 0, 64}, {128, 1, 0, 1, 0, 0, 32}, {192, 1, 0, 1, 0, 0, 64},
                                                {192, 1, 0, 1, 1}, {32, 1, 0, 1, 0}, {32, 1, 0, 1, 1, 0, 64}, {48, 1, 0, 1, 0},
                                                {48, 1, 0, 2, 0, 0, 64}, {48, 1, 0, 1, 1, 0, 64}}) {
    INFO("plan " << bad.block_n << " split " << bad.splits << " cluster " << bad.cluster << " ping-pong " << bad.pingpong);
    all_flows(good, status::bad_shape, &bad);
  }
  // The GEMM alone: K and N limits.
  const auto* x = static_cast<const __nv_bfloat16*>(fake(0x100000));
  CHECK(fp4fuse::gemm::gemm(x, x, 64, 64, 60, fp4fuse::gemm::store_bf16{}, fp4fuse::gemm::engine::automatic).code == status::not_multiple_of_block);
  CHECK(fp4fuse::gemm::gemm(x, x, 64, 60, 64, fp4fuse::gemm::store_bf16{}, fp4fuse::gemm::engine::automatic).code == status::not_multiple_of_block);
  CHECK(fp4fuse::gemm::gemm(x, x, (1 << 30) + 8, 64, 64, fp4fuse::gemm::store_bf16{}, fp4fuse::gemm::engine::automatic).code == status::bad_shape);
  // M = 0 (status.hpp's rule for an empty output): ok with no CUDA call, whatever the engine, so
  // also here without a GPU; a negative M is refused. The output is valid but never written.
  {
    const fp4fuse::matrix_view<__nv_bfloat16> none{static_cast<__nv_bfloat16*>(fake(0x300000)), 0, 64, 64};
    for (const auto e : {fp4fuse::gemm::engine::automatic, fp4fuse::gemm::engine::wgmma, fp4fuse::gemm::engine::mma_sync}) {
      const fp4fuse::result r = fp4fuse::gemm::gemm(x, x, 0, 64, 64, fp4fuse::gemm::store_bf16{none}, e);
      INFO(r.message());
      CHECK(r.code == status::ok);
    }
    CHECK(fp4fuse::gemm::gemm(x, x, -1, 64, 64, fp4fuse::gemm::store_bf16{none}, fp4fuse::gemm::engine::automatic).code == status::bad_shape);
  }
  // The BF16 outputs: stored as 4-byte BF16 pairs, so data 4-byte aligned and ld even (an odd ld
  // made the direct store fault on a misaligned address before this check existed).
  auto* o = static_cast<__nv_bfloat16*>(fake(0x300000));
  const auto dense_store = [&](fp4fuse::matrix_view<__nv_bfloat16> d) {
    return fp4fuse::gemm::gemm(x, x, 64, 64, 64, fp4fuse::gemm::store_bf16{d}, fp4fuse::gemm::engine::automatic).code;
  };
  CHECK(dense_store({nullptr, 64, 64, 64}) == status::null_pointer);
  CHECK(dense_store({o + 1, 64, 64, 64}) == status::misaligned_pointer);
  CHECK(dense_store({o, 64, 64, 65}) == status::bad_leading_dimension);
  CHECK(dense_store({o, 64, 63, 64}) == status::bad_shape);
  CHECK(dense_store({o, 64, 64, 62}) == status::bad_leading_dimension);
  const auto dense_swiglu = [&](fp4fuse::matrix_view<__nv_bfloat16> h) {
    return fp4fuse::gemm::gemm(x, x, 64, 64, 64, fp4fuse::gemm::swiglu_bf16<act_t>{h, act_t{}}, fp4fuse::gemm::engine::automatic).code;
  };
  CHECK(dense_swiglu({nullptr, 64, 32, 32}) == status::null_pointer);
  CHECK(dense_swiglu({o + 1, 64, 32, 32}) == status::misaligned_pointer);
  CHECK(dense_swiglu({o, 64, 32, 33}) == status::bad_leading_dimension);
  // The output's extent is D's (M x N), or M x N / 2 after SwiGLU: a larger one got TMA's zero
  // fill up to the tile's edge, a smaller one was cut, both silently, before gemm() compared them.
  const auto message_has = [](const fp4fuse::result& r, status code, const char* part) {
    INFO(r.message());
    CHECK(r.code == code);
    CHECK(std::strstr(r.message(), part) != nullptr);
  };
  const auto store_result = [&](int M, int N, fp4fuse::matrix_view<__nv_bfloat16> d) {
    return fp4fuse::gemm::gemm(x, x, M, N, 64, fp4fuse::gemm::store_bf16{d}, fp4fuse::gemm::engine::automatic);
  };
  message_has(store_result(64, 64, {o, 65, 64, 64}), status::bad_shape, "store_bf16.out is [65, 64]: the GEMM writes [64, 64]");
  message_has(store_result(64, 64, {o, 32, 64, 64}), status::bad_shape, "store_bf16.out is [32, 64]");
  message_has(store_result(64, 64, {o, 64, 72, 72}), status::bad_shape, "store_bf16.out is [64, 72]");
  message_has(store_result(100, 256, {o, 128, 256, 256}), status::bad_shape, "the GEMM writes [100, 256]");
  const auto swiglu_result = [&](int M, int N, fp4fuse::matrix_view<__nv_bfloat16> h) {
    return fp4fuse::gemm::gemm(x, x, M, N, 64, fp4fuse::gemm::swiglu_bf16<act_t>{h, act_t{}}, fp4fuse::gemm::engine::automatic);
  };
  message_has(swiglu_result(64, 64, {o, 64, 64, 64}), status::bad_shape, "swiglu_bf16.out is [64, 64]: the GEMM writes [64, 32]");
  message_has(swiglu_result(64, 64, {o, 63, 32, 32}), status::bad_shape, "swiglu_bf16.out is [63, 32]");
  // N whole gate/up granule pairs: 16 for the BF16 SwiGLU (N = 24 paired outputs 8..11's gate with
  // TMA's zero fill), 32 for NVFP4 (one block of 16 outputs).
  message_has(swiglu_result(64, 24, {o, 64, 12, 12}), status::not_multiple_of_block, "N = 24: swiglu_bf16 needs a multiple of 16");
  // A column bias with columns needs its data (a null one faulted in the kernel before gemm()
  // checked it); an empty one needs nothing. The biased epilogues' `check` is called directly:
  // through gemm() each would instantiate every kernel of both engines for its type (gemm() calls
  // `check` for every epilogue that has one, as the calls above show).
  const auto refusal_of = [](const auto& epilogue) {
    fp4fuse::argument_checker c("fp4fuse::gemm::gemm");
    epilogue.check(c, 64, 64);  // D of 64 x 64, as the gemm() calls above
    return c.outcome();
  };
  const float* bias_data = static_cast<const float*>(fake(0x700000));
  const auto biased_store = [&](fp4fuse::column_bias b) { return refusal_of(fp4fuse::gemm::store_bf16{{o, 64, 64, 64}, b}); };
  CHECK(biased_store({nullptr, 64}).code == status::null_pointer);
  CHECK(std::strstr(biased_store({nullptr, 64}).message(), "store_bf16.bias.data") != nullptr);
  CHECK(biased_store({static_cast<const float*>(fake(0x700002)), 64}).code == status::misaligned_pointer);
  // Two columns' bias are one 8-byte load (mma_add_bias): data 8-byte aligned, count even (an odd
  // count read the float past it into column `count`).
  CHECK(biased_store({static_cast<const float*>(fake(0x700004)), 64}).code == status::misaligned_pointer);
  CHECK(std::strstr(biased_store({static_cast<const float*>(fake(0x700004)), 64}).message(), "8-byte") != nullptr);
  CHECK(biased_store({bias_data, 63}).code == status::bad_shape);
  CHECK(static_cast<bool>(biased_store({bias_data, 62})));  // a partial bias: columns 62 and 63 get +0
  CHECK(biased_store({bias_data, -1}).code == status::bad_shape);
  CHECK(static_cast<bool>(biased_store({nullptr, 0})));  // no columns: nothing is read
  CHECK(static_cast<bool>(biased_store({bias_data, 64})));
  CHECK(refusal_of(fp4fuse::gemm::swiglu_bf16<act_t, fp4fuse::column_bias>{{o, 64, 32, 32}, act_t{}, {nullptr, 64}}).code == status::null_pointer);
  // The fused NVFP4 epilogue's output, S and bias, each refused with a sentence that names it.
  using nvfp4_epilogue = fp4fuse::gemm::swiglu_nvfp4<act_t>;
  using nvfp4_layout = fp4fuse::scale_layout::swizzled_128x4;
  auto* packed = static_cast<std::uint8_t*>(fake(0x800000));
  auto* scales = static_cast<std::uint8_t*>(fake(0x900000));
  const float* S = static_cast<const float*>(fake(0xA00000));
  const fp4fuse::quantized_matrix<nvfp4_epilogue::format, nvfp4_layout> good_out{packed, 16, scales, nvfp4_layout{64, 2}};
  const auto fused = [&](fp4fuse::quantized_matrix<nvfp4_epilogue::format, nvfp4_layout> out, const float* s) {
    return fp4fuse::gemm::gemm(x, x, 64, 64, 64, nvfp4_epilogue{out, s, act_t{}}, fp4fuse::gemm::engine::automatic);
  };
  const auto with_packed = [&](std::uint8_t* p, std::int64_t ld) {
    auto q = good_out;
    q.packed = p;
    q.ld_packed = ld;
    return q;
  };
  struct refusal {
    fp4fuse::result r;
    status code;
    const char* names;
  };
  auto no_scales = good_out;
  no_scales.scales = nullptr;
  for (const refusal& f : {refusal{fused(with_packed(nullptr, 16), S), status::null_pointer, "swiglu_nvfp4.out.packed"},
                           refusal{fused(with_packed(packed + 4, 16), S), status::misaligned_pointer, "swiglu_nvfp4.out.packed"},
                           refusal{fused(with_packed(packed, 12), S), status::bad_leading_dimension, "swiglu_nvfp4.out.ld_packed"},
                           refusal{fused(with_packed(packed, 8), S), status::bad_leading_dimension, "swiglu_nvfp4.out.ld_packed"},
                           refusal{fused(no_scales, S), status::null_pointer, "swiglu_nvfp4.out.scales"},
                           refusal{fused(good_out, nullptr), status::null_pointer, "swiglu_nvfp4.global_encode_scale"},
                           refusal{fused(good_out, static_cast<const float*>(fake(0xA00002))), status::misaligned_pointer,
                                   "swiglu_nvfp4.global_encode_scale"}}) {
    INFO(f.r.message());
    CHECK(f.r.code == f.code);
    CHECK(std::strstr(f.r.message(), f.names) != nullptr);
  }
  using biased_nvfp4 = fp4fuse::gemm::swiglu_nvfp4<act_t, fp4fuse::intermediate::fp32, fp4fuse::recipe::te_exact, fp4fuse::column_bias>;
  CHECK(refusal_of(biased_nvfp4{good_out, S, act_t{}, {nullptr, 64}}).code == status::null_pointer);
  CHECK(refusal_of(biased_nvfp4{good_out, S, act_t{}, {static_cast<const float*>(fake(0x700004)), 64}}).code == status::misaligned_pointer);
  CHECK(refusal_of(fp4fuse::gemm::swiglu_bf16<act_t, fp4fuse::column_bias>{{o, 64, 32, 32}, act_t{}, {bias_data, 33}}).code == status::bad_shape);
  // The NVFP4 output's extent (rows x scale columns * 16) is M x N / 2, and N whole blocks.
  const auto fused_shape = [&](int M, int N, nvfp4_layout layout) {
    auto q = good_out;
    q.layout = layout;
    return fp4fuse::gemm::gemm(x, x, M, N, 64, nvfp4_epilogue{q, S, act_t{}}, fp4fuse::gemm::engine::automatic);
  };
  message_has(fused_shape(64, 64, nvfp4_layout{65, 2}), status::bad_shape, "swiglu_nvfp4.out is [65, 32]: the GEMM writes [64, 32]");
  message_has(fused_shape(64, 64, nvfp4_layout{64, 1}), status::bad_shape, "swiglu_nvfp4.out is [64, 16]");
  message_has(fused_shape(64, 48, nvfp4_layout{64, 1}), status::not_multiple_of_block, "N = 48: swiglu_nvfp4 needs a multiple of 32");
  CHECK(static_cast<bool>(refusal_of(biased_nvfp4{good_out, S, act_t{}, {bias_data, 64}})));
}

namespace {

struct gpu_problem {
  int T, H, I;
  l1_gemm::host::inputs in;
  device_buffer x, w, gate_up, h, packed, scales, S, amax;
  float S_host = 0;

  gpu_problem(int T_, int H_, int I_, const char* salt)
      : T(T_), H(H_), I(I_), in(T_, H_, I_, rng(salt)()), x(in.x.size() * 2), w(in.w.size() * 2),
        gate_up(static_cast<std::size_t>(T_) * 2 * I_ * 2), h(static_cast<std::size_t>(T_) * I_ * 2),
        packed(static_cast<std::size_t>(T_) * I_ / 2), scales(static_cast<std::size_t>(l1_gemm::host::scale_layout{T_, I_ / 16}.size_bytes())),
        S(4), amax(4) {
    x.upload(in.x.data(), in.x.size() * 2);
    w.upload(in.w.data(), in.w.size() * 2);
  }
  l1_gemm::problem args() const {
    return {x.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), T, H, I, gate_up.as<__nv_bfloat16>(), h.as<__nv_bfloat16>(),
            packed.as<std::uint8_t>(), scales.as<std::uint8_t>(), S.as<float>()};
  }
  /// S from the amax of the compact SwiGLU output, as the example calibrates it.
  const fp4fuse::gemm::sm90::launch_plan* plan = nullptr;
  void calibrate(fp4fuse::gemm::engine e) {
    REQUIRE(static_cast<bool>(fp4fuse::gemm::gemm(x.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), T, 2 * I, H,
                                            fp4fuse::gemm::swiglu_bf16<act_t>{{h.as<__nv_bfloat16>(), T, I, I}, act_t{}}, e, nullptr, plan)));
    REQUIRE(static_cast<bool>(fp4fuse::amax(fp4fuse::matrix_view<const __nv_bfloat16>{h.as<__nv_bfloat16>(), T, I, I}, amax.as<float>(), fp4fuse::global_scale::per_tensor{S.as<float>()})));
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
    FP4FUSE_TEST_CUDA(cudaMemcpy(&S_host, S.as<float>(), 4, cudaMemcpyDeviceToHost));
    REQUIRE(std::isfinite(S_host));
    REQUIRE(S_host > 0.0f);
  }
  template <class Flow>
  void run(Flow f, fp4fuse::gemm::engine e, unsigned char poison_byte) {
    FP4FUSE_TEST_CUDA(cudaMemset(packed.as<void>(), poison_byte, packed.bytes()));
    FP4FUSE_TEST_CUDA(cudaMemset(scales.as<void>(), poison_byte, scales.bytes()));
    REQUIRE(static_cast<bool>(l1_gemm::run(args(), f, act_t{}, e, nullptr, plan)));
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  }
  bool guards() const {
    return x.guard_intact() && w.guard_intact() && gate_up.guard_intact() && h.guard_intact() && packed.guard_intact() &&
           scales.guard_intact();
  }
};

float bf16_at(const std::vector<unsigned char>& bytes, std::size_t i) {
  std::uint16_t u;
  std::memcpy(&u, &bytes[2 * i], 2);
  return float_of(std::uint32_t(u) << 16);
}

void check_problem(int T, int H, int I, fp4fuse::gemm::engine e, const fp4fuse::gemm::sm90::launch_plan* plan = nullptr) {
  const std::string salt = "l1 " + std::to_string(T) + " " + std::to_string(H) + " " + std::to_string(I);
  gpu_problem p(T, H, I, salt.c_str());
  p.plan = plan;
  INFO("engine " << fp4fuse::gemm::engine_name(e) << " T=" << T << " H=" << H << " I=" << I << " plan "
                 << (plan ? std::to_string(plan->block_m) + " x " + std::to_string(plan->block_n) + " x split " + std::to_string(plan->splits) + " x cluster " +
                                  std::to_string(plan->cluster) + (plan->pingpong == 1 ? " ping-pong, in flight " + std::to_string(plan->in_flight) : std::string(" cooperative"))
                            : std::string("auto")));
  p.calibrate(e);
  const l1_gemm::host::scale_layout layout{T, I / 16};

  // Rows checked against float64: all of them for small problems, a spread otherwise.
  std::vector<int> rows;
  const int step = std::max(1, T / 48);
  for (int r = 0; r < T; r += step) rows.push_back(r);
  if (rows.back() != T - 1) rows.push_back(T - 1);
  std::vector<std::vector<double>> gu_ref;
  std::vector<std::vector<float>> h_ref;
  for (int r : rows) {
    gu_ref.push_back(l1_gemm::host::gate_up_row(p.in, r));
    h_ref.push_back(l1_gemm::host::swiglu_row(gu_ref.back(), I, act_t{}));
  }

  // Flow 3 (fp32): every byte written (two poisons give the same bytes), padding 0x00, bounded
  // differences from the float64 reference.
  p.run(l1_gemm::flow::fused_nvfp4<>{}, e, 0xA5);
  const auto packed3 = p.packed.download(), scales3 = p.scales.download();
  p.run(l1_gemm::flow::fused_nvfp4<>{}, e, 0x5A);
  CHECK(p.packed.download() == packed3);
  CHECK(p.scales.download() == scales3);
  for (std::int64_t r = 0; r < layout.padded_rows(); ++r)
    for (std::int64_t b = 0; b < layout.padded_cols(); ++b)
      if (layout.is_padding(r, b)) REQUIRE(scales3[static_cast<std::size_t>(layout.offset(r, b))] == 0);
  l1_gemm::host::comparison cmp;
  for (std::size_t i = 0; i < rows.size(); ++i) l1_gemm::host::compare_row(cmp, packed3, scales3, T, I, rows[i], h_ref[i], p.S_host);
  INFO("flow 3: " << cmp.code_diffs << " of " << cmp.codes << " codes differ; rel. RMS " << cmp.rel_rms() << " (reference "
                  << cmp.reference_rel_rms() << ")");
  CHECK(cmp.diff_fraction() < 0.005);                               // accumulation order only
  CHECK(cmp.rel_rms() <= cmp.reference_rel_rms() * 1.02 + 1e-4);  // no worse than quantizing the exact values
  CHECK(cmp.rel_rms() < 0.15);

  // Flow 2, then flow 3 with the BF16 intermediate: bit-identical.
  p.run(l1_gemm::flow::compact_bf16{}, e, 0xA5);
  const auto packed2 = p.packed.download(), scales2 = p.scales.download(), h2 = p.h.download();
  p.run(l1_gemm::flow::fused_nvfp4<fp4fuse::intermediate::bf16>{}, e, 0x5A);
  CHECK(p.packed.download() == packed2);
  CHECK(p.scales.download() == scales2);
  // Flow 2's BF16 SwiGLU within one BF16 rounding (plus accumulation noise) of the reference.
  std::size_t h_bad = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int c = 0; c < I; ++c) {
      const float got = bf16_at(h2, static_cast<std::size_t>(rows[i]) * I + c), want = h_ref[i][static_cast<std::size_t>(c)];
      h_bad += !(std::fabs(got - want) <= std::fabs(want) * 0.0079f + 1e-5f);
    }
  CHECK(h_bad == 0);

  // Flow 1: the BF16 gate/up within a BF16 rounding of float64, and its NVFP4 output equal to the
  // host codec applied to that BF16 gate/up (the standalone kernel's contract).
  p.run(l1_gemm::flow::interleaved_bf16{}, e, 0xA5);
  const auto gu1 = p.gate_up.download(), packed1 = p.packed.download(), scales1 = p.scales.download();
  std::size_t gu_bad = 0, flow1_diff = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int r = rows[i];
    std::vector<float> h1(static_cast<std::size_t>(I));
    for (int c = 0; c < 2 * I; ++c) {
      const float got = bf16_at(gu1, static_cast<std::size_t>(r) * 2 * I + c);
      const double want = gu_ref[i][static_cast<std::size_t>(c)];
      gu_bad += !(std::fabs(got - want) <= std::fabs(want) * 0.0079 + 1e-5);
    }
    for (int c = 0; c < I; ++c) {
      const std::size_t base = static_cast<std::size_t>(r) * 2 * I;
      h1[static_cast<std::size_t>(c)] = act_t{}.apply(bf16_at(gu1, base + l1_gemm::host::interleave::gate_col(c, I)),
                                                      bf16_at(gu1, base + l1_gemm::host::interleave::up_col(c, I)));
    }
    const l1_gemm::host::quantized_row want = l1_gemm::host::quantize_row(h1, p.S_host);
    flow1_diff += !std::equal(want.packed.begin(), want.packed.end(), packed1.begin() + static_cast<std::ptrdiff_t>(r) * (I / 2));
    for (int b = 0; b < I / 16; ++b) flow1_diff += scales1[static_cast<std::size_t>(layout.offset(r, b))] != want.scales[b];
  }
  CHECK(gu_bad == 0);
  CHECK(flow1_diff == 0);

  // Every row, not only the float64-checked ones: the wgmma engine's BF16 gate/up against the
  // mma.sync engine's (different accumulation order: within 2 BF16 ulps).
  if (e == fp4fuse::gemm::engine::wgmma) {
    device_buffer other(p.gate_up.bytes());
    REQUIRE(static_cast<bool>(fp4fuse::gemm::gemm(p.x.as<__nv_bfloat16>(), p.w.as<__nv_bfloat16>(), T, 2 * I, H,
                                            fp4fuse::gemm::store_bf16{{other.as<__nv_bfloat16>(), T, 2 * I, 2 * I}},
                                            fp4fuse::gemm::engine::mma_sync)));
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
    const auto mine = p.gate_up.download(), theirs = other.download();
    std::size_t far = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(T) * 2 * I; ++i) {
      const float a = bf16_at(mine, i), b = bf16_at(theirs, i);
      far += !(std::fabs(a - b) <= std::fabs(b) * 0.016f + 1e-5f);
    }
    CHECK(far == 0);
    CHECK(other.guard_intact());
  }
  CHECK(p.guards());
}

std::vector<fp4fuse::gemm::engine> engines_here() {
  std::vector<fp4fuse::gemm::engine> e{fp4fuse::gemm::engine::mma_sync};
  if (fp4fuse::gemm::resolve(fp4fuse::gemm::engine::automatic) == fp4fuse::gemm::engine::wgmma) e.push_back(fp4fuse::gemm::engine::wgmma);
  return e;
}

/// True where the wgmma engine runs (an sm_90 device and this build's sm_90a image); otherwise
/// fails on an sm_90 device (a build without the sm_90a image) and warns on others
/// (sm90_engine_here), and returns false.
bool wgmma_here(const char* untested) {
  return sm90_engine_here(fp4fuse::gemm::resolve(fp4fuse::gemm::engine::automatic) == fp4fuse::gemm::engine::wgmma, untested);
}

}  // namespace

TEST_CASE("dense L1 GEMM [gpu]: the three flows on every engine this GPU runs", "[gpu][gemm][dense]") {
  for (fp4fuse::gemm::engine e : engines_here()) {
    // T = 1; T % 128 != 0; I % 64 != 0 (80, 208, 1040); H % 64 != 0 (40 < 64, 72, 200); partial N tiles
    // (2I % 256 != 0); GPT-OSS's H = 2880, I = 2880; several tiles per CTA of the persistent kernel.
    const int shapes[][3] = {{1, 64, 16}, {1, 40, 16}, {1, 7168, 2048}, {37, 72, 80}, {130, 200, 208},
                             {300, 512, 1040}, {128, 2880, 2880}, {1100, 256, 2048}};
    for (const auto& s : shapes) check_problem(s[0], s[1], s[2], e);
  }
}

namespace {

/// What the sm_90a launcher prints (FP4FUSE_GEMM_VERBOSE, to stderr) while `f` runs: its plan line
/// for each launch, which names the staged store when the launch staged it.
/// stderr and the caller's FP4FUSE_GEMM_VERBOSE are restored however `f` ends (a REQUIRE inside
/// it throws).
template <class F>
std::string launcher_lines(F&& f) {
  std::fflush(stderr);
  struct redirect {
    int saved = dup(fileno(stderr));
    FILE* capture = std::tmpfile();
    // The caller's own setting, copied (a later setenv may free getenv's string), put back.
    std::optional<std::string> caller_verbose = [] {
      const char* v = std::getenv("FP4FUSE_GEMM_VERBOSE");
      return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
    }();
    ~redirect() {
      std::fflush(stderr);
      if (caller_verbose) {
        setenv("FP4FUSE_GEMM_VERBOSE", caller_verbose->c_str(), 1);
      } else {
        unsetenv("FP4FUSE_GEMM_VERBOSE");
      }
      if (saved >= 0) {
        dup2(saved, fileno(stderr));
        close(saved);
      }
      if (capture != nullptr) std::fclose(capture);
    }
  } r;
  REQUIRE((r.saved >= 0 && r.capture != nullptr));
  REQUIRE(dup2(fileno(r.capture), fileno(stderr)) >= 0);
  setenv("FP4FUSE_GEMM_VERBOSE", "1", 1);
  f();
  std::fflush(stderr);
  std::rewind(r.capture);
  std::string text;
  for (int ch = std::fgetc(r.capture); ch != EOF; ch = std::fgetc(r.capture)) text.push_back(static_cast<char>(ch));
  return text;
}

/// How many of `lines`' sm_90a launcher lines name a kernel other than forced `plan`'s (tile,
/// schedule, and the cluster where the plan fixes it), and how many there are: a forced plan the
/// launcher replaced would show here, not in the bytes.
std::pair<int, int> launches_not_of(const std::string& lines, const fp4fuse::gemm::sm90::launch_plan& plan) {
  const std::string tile = " tile " + std::to_string(plan.block_m) + "x" + std::to_string(plan.block_n) + " ";
  const std::string schedule = plan.pingpong == 1 ? " ping-pong tile " : " cooperative tile ";
  const std::string cluster = " cluster " + std::to_string(plan.cluster);
  int other = 0, all = 0;
  std::size_t begin = 0;
  while (begin < lines.size()) {
    std::size_t end = lines.find('\n', begin);
    if (end == std::string::npos) end = lines.size();
    const std::string line = lines.substr(begin, end - begin);
    begin = end + 1;
    if (line.rfind("sm90 gemm:", 0) != 0) continue;
    ++all;
    const bool same = line.find(tile) != std::string::npos && line.find(schedule) != std::string::npos &&
                      (plan.cluster == 0 || line.find(cluster) != std::string::npos);
    other += !same;
  }
  return {other, all};
}

/// A BF16 output [M, cols] written into poisoned [M, ld] (ld >= cols): D's bytes as [M, cols], how
/// many 2-byte elements beyond column cols changed from poison, and whether the buffer's guard is intact.
struct written_bf16 {
  std::vector<unsigned char> d;
  std::size_t outside = 0;
  bool guard = false;
};
written_bf16 read_written(const device_buffer& buffer, int M, int cols, int ld) {
  const std::vector<unsigned char> got = buffer.download();
  written_bf16 out{std::vector<unsigned char>(static_cast<std::size_t>(M) * cols * 2)};
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < ld; ++c) {
      const std::size_t at = (static_cast<std::size_t>(r) * ld + c) * 2;
      if (c < cols) {
        std::memcpy(&out.d[(static_cast<std::size_t>(r) * cols + c) * 2], &got[at], 2);
      } else {
        out.outside += got[at] != poison || got[at + 1] != poison;
      }
    }
  }
  out.guard = buffer.guard_intact();
  return out;
}

/// How many elements of D (BF16 [M, N], row-major bytes) in rows 0, step, 2 step, ... are further
/// from X W^T (+ bias) in float64 than the output's BF16 rounding (2^-8 relative) and fp32
/// summation (K 2^-24 of sum |x w|) allow. A bias ignored or added to another column is off by up
/// to 1; an element never written (poison) is off by far more.
std::size_t bf16_off_float64(const std::vector<__nv_bfloat16>& xh, const std::vector<__nv_bfloat16>& wh, const std::vector<float>* bias,
                             const std::vector<unsigned char>& d, int M, int N, int K, int step) {
  std::size_t off = 0;
  for (int r = 0; r < M; r += step) {
    for (int c = 0; c < N; ++c) {
      double sum = bias != nullptr ? (*bias)[static_cast<std::size_t>(c)] : 0.0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        const double p = double(__bfloat162float(xh[std::size_t(r) * K + k])) * __bfloat162float(wh[std::size_t(c) * K + k]);
        sum += p;
        magnitude += std::fabs(p);
      }
      __nv_bfloat16 got;
      std::memcpy(&got, &d[(std::size_t(r) * N + c) * 2], 2);
      const double error = std::fabs(double(__bfloat162float(got)) - sum);
      off += !(error <= std::ldexp(std::fabs(sum), -8) + std::ldexp(magnitude * K, -24));  // NaN counts as off
    }
  }
  return off;
}

}  // namespace

TEST_CASE("dense L1 GEMM [gpu]: every tile width and K split of the wgmma engine", "[gpu][gemm][dense]") {
  if (!wgmma_here("the wgmma plans are not exercised")) return;
  // Splits that do not divide the K blocks, more splits than needed, rows wholly beyond M in a
  // split tile (T = 1, 37), several units per CTA (1100 rows).
  // {tile width, K splits, -, CTAs per cluster, ping-pong, K steps in flight, tile rows}: clusters of 2 with an odd number of
  // row blocks (T = 1, 37, 300: the second CTA's tile lies wholly beyond M); ping-pong with one
  // tile per CTA (the second consumer idle) and with several; 64 x 32 tiles (one consumer, the
  // other idle), whose padding reaches up to three tile widths beyond N.
  const fp4fuse::gemm::sm90::launch_plan plans[] = {{256, 1, 0, 1, 0}, {256, 1, 0, 2, 0}, {128, 1, 0, 1, 0}, {128, 1, 0, 2, 0},
                                              {256, 3, 0, 1, 0}, {128, 5, 0, 1, 0}, {128, 16, 0, 1, 0},
                                              {128, 1, 0, 1, 1, 1}, {128, 1, 0, 2, 1, 1}, {128, 1, 0, 1, 1, 2}, {128, 1, 0, 2, 1, 2},
                                              {128, 1, 0, 1, 0, 0, 64}, {128, 1, 0, 2, 0, 0, 64}, {64, 1, 0, 1, 0, 0, 64},
                                              {64, 1, 0, 2, 0, 0, 64}, {64, 3, 0, 1, 0, 0, 64}, {128, 2, 0, 1, 0, 0, 64},
                                              {192, 1, 0, 1, 0}, {192, 1, 0, 2, 0}, {192, 3, 0, 1, 0},
                                              {32, 1, 0, 1, 0, 0, 64}, {32, 1, 0, 2, 0, 0, 64}, {32, 3, 0, 1, 0, 0, 64},
                                              {256, 1, 0, 1, 0, 0, 64}, {256, 1, 0, 2, 0, 0, 64}, {256, 2, 0, 1, 0, 0, 64}};
  // The last shape gives every CTA several tiles (each ping-pong consumer more than one, so its
  // ring position skips whole passes of the ring).
  // The 4096 x 40 shape has one K block (fewer than the ping-pong's K steps in flight).
  const int shapes[][3] = {{1, 7168, 2048}, {37, 2880, 2880}, {37, 200, 80}, {300, 512, 1040}, {1100, 1024, 256},
                           {4096, 512, 2048}, {4096, 40, 256}};
  for (const auto& plan : plans) {
    for (const auto& s : shapes) {
      // The launcher's own lines (FP4FUSE_GEMM_VERBOSE) show that each launch ran the plan asked for.
      const std::string lines = launcher_lines([&] { check_problem(s[0], s[1], s[2], fp4fuse::gemm::engine::wgmma, &plan); });
      const auto [other, all] = launches_not_of(lines, plan);
      INFO("T=" << s[0] << " H=" << s[1] << " I=" << s[2] << " launcher:\n" << lines);
      CHECK(all >= 6);  // the calibration and five flow runs
      CHECK(other == 0);
    }
  }
}

namespace {

/// The plan of the split-K workspace tests: 128 x 128 tiles, K split 4 ways, no cluster.
const fp4fuse::gemm::sm90::launch_plan split_plan{128, 4, 0, 1, 0};

/// A GEMM for the split-K workspace tests: random X [M, K] and W [N, K] on the device, and room
/// for `outputs` BF16 outputs [M, N] side by side (poisoned).
struct split_problem {
  int M, N, K;
  l1_gemm::host::inputs in;
  device_buffer x, w, out;
  split_problem(int M_, int N_, int K_, int outputs, const char* salt)
      : M(M_), N(N_), K(K_), in(M_, K_, N_ / 2, rng(salt)()), x(in.x.size() * 2), w(in.w.size() * 2),
        out(static_cast<std::size_t>(outputs) * M_ * N_ * 2) {
    x.upload(in.x.data(), in.x.size() * 2);
    w.upload(in.w.data(), in.w.size() * 2);
  }
  /// The GEMM into output `i` on `stream`.
  fp4fuse::result run(int i, cudaStream_t stream, const fp4fuse::gemm::sm90::workspace* ws = nullptr) const {
    __nv_bfloat16* o = out.as<__nv_bfloat16>() + static_cast<std::size_t>(i) * M * N;
    return fp4fuse::gemm::gemm(x.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), M, N, K, fp4fuse::gemm::store_bf16{{o, M, N, N}},
                         fp4fuse::gemm::engine::wgmma, stream, &split_plan, ws);
  }
  /// How many of outputs 0 .. count - 1 differ in any bit from output `reference`.
  int differing(int count, int reference) const {
    const std::vector<unsigned char> all = out.download();
    const std::size_t bytes = static_cast<std::size_t>(M) * N * 2;
    const auto at = [&](int i) { return all.begin() + static_cast<std::ptrdiff_t>(bytes * i); };
    int bad = 0;
    for (int i = 0; i < count; ++i) bad += !std::equal(at(i), at(i) + static_cast<std::ptrdiff_t>(bytes), at(reference));
    return bad;
  }
  /// True when output `i` was written (is not all poison).
  bool written(int i) const {
    const std::vector<unsigned char> all = out.download();
    const std::size_t bytes = static_cast<std::size_t>(M) * N * 2;
    return !std::all_of(all.begin() + static_cast<std::ptrdiff_t>(bytes * i), all.begin() + static_cast<std::ptrdiff_t>(bytes * (i + 1)),
                        [](unsigned char c) { return c == poison; });
  }
};

/// Two non-blocking streams, destroyed at scope exit.
struct stream_pair {
  cudaStream_t a = nullptr, b = nullptr;
  stream_pair() {
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    FP4FUSE_TEST_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  }
  ~stream_pair() {
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }
};

}  // namespace


TEST_CASE("gemm [gpu]: the BF16 store staged through TMA (ping-pong and cooperative 128-row tiles) writes the direct store's bytes and nothing else",
          "[gpu][gemm][dense]") {
  if (!wgmma_here("the staged store is not exercised")) return;
  using fp4fuse::gemm::sm90::launch_plan;
  // Every plan that stages: the ping-pong in both cluster sizes and both MMA depths; the cooperative
  // 128 x 256 (4 boxes per fragment), 128 x 192 (3: odd, so a fragment ends in slot 0 and the next
  // one's first box waits for every earlier box store) and
  // 128 x 128 in both cluster sizes, and 128 x 256 split 3 (the fixup's sums staged). Each runs with
  // ld = N + 8 (rows 16-byte aligned: the launcher stages, checked by stage_store) and ld = N + 2
  // (4-byte aligned only: the same plan stores directly), both into poisoned memory. Unsplit plans
  // must write the bytes of the cooperative 128 x 128 plan's direct store (the same sums in the same
  // order); the split plan those of its own direct store. Shapes: rows and columns ending inside a
  // tile and inside a 64-wide box (M = 300, N = 200 and 136); 72 and 128 tiles (1100 x 1024, 4096 x
  // 512: one per CTA); 512 tiles (2048 x 4096: on 132 SMs each consumer stores several tiles,
  // reusing its box slots across them).
  const launch_plan plans[] = {{128, 1, 0, 1, 1, 1}, {128, 1, 0, 2, 1, 1}, {128, 1, 0, 1, 1, 2}, {128, 1, 0, 2, 1, 2},
                               {256, 1, 0, 1, 0},    {256, 1, 0, 2, 0},    {192, 1, 0, 1, 0},    {192, 1, 0, 2, 0},
                               {128, 1, 0, 1, 0},    {128, 1, 0, 2, 0},    {256, 3, 0, 1, 0}};
  const launch_plan reference_plan{128, 1, 0, 1, 0};
  const int shapes[][3] = {{300, 200, 512}, {37, 136, 128}, {1100, 1024, 256}, {4096, 512, 2048}, {2048, 4096, 256}};
  auto g = rng("staged store");
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& shape : shapes) {
    const int M = shape[0], N = shape[1], K = shape[2];
    std::vector<__nv_bfloat16> xh(static_cast<std::size_t>(M) * K), wh(static_cast<std::size_t>(N) * K);
    for (auto& v : xh) v = __float2bfloat16(u(g));
    for (auto& v : wh) v = __float2bfloat16(u(g));
    device_buffer x(xh.size() * 2), w(wh.size() * 2);
    x.upload(xh.data(), xh.size() * 2);
    w.upload(wh.data(), wh.size() * 2);
    // Runs `plan` into poisoned [M, ld]: D's bytes as [M, N], the bytes written beyond column N, the guard.
    const auto run = [&](const launch_plan& plan, int ld) {
      device_buffer d(static_cast<std::size_t>(M) * ld * 2);
      const fp4fuse::gemm::store_bf16 store{{d.as<__nv_bfloat16>(), M, N, ld}};
      fp4fuse::gemm::sm90::detail::staged_bf16_store staged{};
      CHECK(fp4fuse::gemm::sm90::detail::stage_store(store, staged) == (ld % 8 == 0));
      // The launcher's own line says whether it launched a staged kernel: so a regression to the
      // direct store (the same bytes) fails here.
      fp4fuse::result launched;
      const std::string line = launcher_lines([&] {
        launched = fp4fuse::gemm::gemm(x.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), M, N, K, store, fp4fuse::gemm::engine::wgmma, nullptr, &plan);
      });
      INFO("launcher: " << line);
      REQUIRE(static_cast<bool>(launched));
      CHECK(line.find("sm90 gemm:") != std::string::npos);
      CHECK((line.find("staged through TMA") != std::string::npos) == (ld % 8 == 0));
      FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
      return read_written(d, M, N, ld);
    };
    INFO("M=" << M << " N=" << N << " K=" << K);
    const std::vector<unsigned char> reference = run(reference_plan, N + 2).d;
    // The reference itself written and right (about 40 rows against float64): the plans agreeing
    // with it is not agreeing on poison.
    CHECK(bf16_off_float64(xh, wh, nullptr, reference, M, N, K, std::max(1, M / 40)) == 0);
    for (const launch_plan& plan : plans) {
      INFO("plan " << plan.block_m << " x " << plan.block_n << (plan.pingpong == 1 ? " ping-pong" : " cooperative") << " split "
                   << plan.splits << " cluster " << plan.cluster << " in flight " << plan.in_flight);
      const written_bf16 direct = run(plan, N + 2);
      CHECK(direct.outside == 0);
      CHECK(direct.guard);
      const written_bf16 staged = run(plan, N + 8);
      CHECK(staged.outside == 0);
      CHECK(staged.guard);
      std::size_t differ = 0, differ_reference = 0;
      for (std::size_t i = 0; i < staged.d.size(); ++i) {
        differ += staged.d[i] != direct.d[i];
        differ_reference += staged.d[i] != reference[i];
      }
      CHECK(differ == 0);
      if (plan.splits == 1) CHECK(differ_reference == 0);
    }
  }
}

TEST_CASE("gemm [gpu]: a 64-row tile over fewer rows of X (decode) loads only those rows and computes exact zeros beyond them",
          "[gpu][gemm][dense]") {
  if (!wgmma_here("the short X box is not exercised")) return;
  using fp4fuse::gemm::sm90::launch_plan;
  // X's box stops at M (x_box_rows) and the kernel zeroes the ring's rows beyond once, where TMA's
  // out-of-bounds fill used to put them. The rows beyond M are invisible through gemm() (every
  // epilogue bounds-checks them), so this calls the launcher with an output view of 64 rows over a
  // GEMM of M: the BF16 store then writes the whole tile, and rows M .. 63 must be zeros, not poison
  // and not whatever a previous kernel left in shared memory (each shape first runs the same plan
  // over 64 rows of random X, so the ring holds nonzero rows). Rows below M must be the bytes
  // gemm() writes. Every 64-row plan: 64 x 32 and 64 x 48 (one consumer), 64 x 64, 64 x 128, 64 x 256,
  // and 64 x 128 and 64 x 48 split 3 (the fixup). K = 2880 makes several passes of every ring (the zeroed rows must
  // outlive them); N = 200 and K = 72 end inside tiles.
  const launch_plan plans[] = {{32, 1, 0, 1, 0, 0, 64}, {48, 1, 0, 1, 0, 0, 64}, {64, 1, 0, 1, 0, 0, 64}, {128, 1, 0, 1, 0, 0, 64},
                               {256, 1, 0, 1, 0, 0, 64}, {128, 3, 0, 1, 0, 0, 64}, {48, 3, 0, 1, 0, 0, 64}};
  const int rows[] = {1, 8, 37, 63};
  const int shapes[][2] = {{5760, 2880}, {200, 72}};
  for (const auto& shape : shapes) {
    const int N = shape[0], K = shape[1];
    const std::string salt = "short x box " + std::to_string(N) + " " + std::to_string(K);
    split_problem p(64, N, K, 1, salt.c_str());  // X [64, K], W [N, K]
    const std::size_t tile_bytes = static_cast<std::size_t>(64) * N * 2;
    for (const launch_plan& plan : plans) {
      INFO("N=" << N << " K=" << K << " plan 64 x " << plan.block_n << " split " << plan.splits);
      device_buffer primed(tile_bytes);
      REQUIRE(static_cast<bool>(fp4fuse::gemm::gemm(p.x.as<__nv_bfloat16>(), p.w.as<__nv_bfloat16>(), 64, N, K,
                                                    fp4fuse::gemm::store_bf16{{primed.as<__nv_bfloat16>(), 64, N, N}},
                                                    fp4fuse::gemm::engine::wgmma, nullptr, &plan)));
      for (int M : rows) {
        INFO("M=" << M);
        device_buffer whole(tile_bytes), want(static_cast<std::size_t>(M) * N * 2);
        REQUIRE(static_cast<bool>(fp4fuse::gemm::sm90::launch(p.x.as<__nv_bfloat16>(), p.w.as<__nv_bfloat16>(), M, N, K,
                                                              fp4fuse::gemm::store_bf16{{whole.as<__nv_bfloat16>(), 64, N, N}}, nullptr,
                                                              &plan)));
        REQUIRE(static_cast<bool>(fp4fuse::gemm::gemm(p.x.as<__nv_bfloat16>(), p.w.as<__nv_bfloat16>(), M, N, K,
                                                      fp4fuse::gemm::store_bf16{{want.as<__nv_bfloat16>(), M, N, N}},
                                                      fp4fuse::gemm::engine::wgmma, nullptr, &plan)));
        FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
        const std::vector<unsigned char> got = whole.download(), expected = want.download();
        const std::size_t below = static_cast<std::size_t>(M) * N * 2;
        CHECK(std::equal(expected.begin(), expected.end(), got.begin()));
        std::size_t nonzero = 0;
        for (std::size_t i = below; i < got.size(); i += 2) nonzero += (got[i] | (got[i + 1] & 0x7f)) != 0;  // +0 or -0
        CHECK(nonzero == 0);
        CHECK(whole.guard_intact());
        CHECK(want.guard_intact());
      }
    }
  }
}

TEST_CASE("gemm [gpu]: 64 x 48 tiles (decode, BF16 stores) write the 64 x 64 plan's bytes and nothing else; NVFP4 refuses them",
          "[gpu][gemm][dense]") {
  if (!wgmma_here("the 64 x 48 tiles are not exercised")) return;
  using fp4fuse::gemm::sm90::launch_plan;
  // The planner gives the BF16 stores 64 x 48 tiles at decode where they fill one wave (GPT-OSS's
  // 2I = 5760: 120 tiles); one consumer warpgroup computes m64n48 with a 13-stage ring. Every BF16
  // epilogue (plain, with a column bias, SwiGLU, clamped SwiGLU with a bias) with 64 x 48 must
  // write exactly what 64 x 64 writes (the same sums in the same order), split 3 what 64 x 64
  // split 3 writes, into poisoned [M, ld] with ld = cols + 2: the two columns beyond and the guard
  // untouched. Shapes: decode at GPT-OSS's width (M = 1, 8), N ending inside a 48-wide tile (208:
  // 4 tiles and 16 columns), K ending inside a block (72, 200), two row blocks (M = 100).
  const launch_plan plan48{48, 1, 0, 1, 0, 0, 64}, plan64{64, 1, 0, 1, 0, 0, 64};
  const launch_plan plan48_split{48, 3, 0, 1, 0, 0, 64}, plan64_split{64, 3, 0, 1, 0, 0, 64};
  const int shapes[][3] = {{1, 5760, 2880}, {8, 5760, 2880}, {37, 208, 72}, {64, 96, 200}, {100, 208, 128}};
  auto g = rng("64 x 48 tiles");
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& shape : shapes) {
    const int M = shape[0], N = shape[1], K = shape[2], I = N / 2;
    INFO("M=" << M << " N=" << N << " K=" << K);
    std::vector<__nv_bfloat16> xh(static_cast<std::size_t>(M) * K), wh(static_cast<std::size_t>(N) * K);
    for (auto& v : xh) v = __float2bfloat16(u(g));
    for (auto& v : wh) v = __float2bfloat16(u(g));
    std::vector<float> bh(static_cast<std::size_t>(N));
    for (auto& v : bh) v = u(g);
    device_buffer x(xh.size() * 2), w(wh.size() * 2), b(bh.size() * 4);
    x.upload(xh.data(), xh.size() * 2);
    w.upload(wh.data(), wh.size() * 2);
    b.upload(bh.data(), bh.size() * 4);
    const fp4fuse::column_bias bias{b.as<float>(), N};
    // Runs the epilogue that `make(view)` builds over a poisoned [M, cols] (ld = cols + 2) with
    // `plan`: D's bytes, and whether anything beyond them changed.
    const auto run = [&](const launch_plan& plan, int cols, const auto& make) {
      const int ld = cols + 2;
      device_buffer d(static_cast<std::size_t>(M) * ld * 2);
      const auto epi = make(fp4fuse::matrix_view<__nv_bfloat16>{d.as<__nv_bfloat16>(), M, cols, ld});
      fp4fuse::result launched;
      const std::string line = launcher_lines([&] {
        launched = fp4fuse::gemm::gemm(x.as<__nv_bfloat16>(), w.as<__nv_bfloat16>(), M, N, K, epi, fp4fuse::gemm::engine::wgmma, nullptr, &plan);
      });
      INFO("launcher: " << line);
      REQUIRE(static_cast<bool>(launched));
      const int splits = std::min(plan.splits, (K + 63) / 64);  // the launcher keeps every split's K blocks
      CHECK(line.find("tile 64x" + std::to_string(plan.block_n) + " split " + std::to_string(splits) + " cluster 1") != std::string::npos);
      FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
      return read_written(d, M, cols, ld);
    };
    const auto same = [&](int cols, const auto& make, const char* what) {
      INFO(what);
      for (const auto& [narrow, wide] : {std::pair{plan48, plan64}, {plan48_split, plan64_split}}) {
        INFO("split " << narrow.splits);
        const written_bf16 a = run(narrow, cols, make), want = run(wide, cols, make);
        CHECK(a.d == want.d);
        CHECK(std::any_of(a.d.begin(), a.d.end(), [](unsigned char c) { return c != poison; }));
        CHECK(a.outside == 0);
        CHECK(a.guard);
        CHECK(want.outside == 0);
        CHECK(want.guard);
      }
    };
    same(N, [&](fp4fuse::matrix_view<__nv_bfloat16> v) { return fp4fuse::gemm::store_bf16{v}; }, "store_bf16");
    same(N, [&](fp4fuse::matrix_view<__nv_bfloat16> v) { return fp4fuse::gemm::store_bf16{v, bias}; }, "store_bf16 with a column bias");
    // The plans agree with each other; the biased store also agrees with the host, X W^T + b in
    // float64, every row.
    const written_bf16 biased = run(plan48, N, [&](fp4fuse::matrix_view<__nv_bfloat16> v) { return fp4fuse::gemm::store_bf16{v, bias}; });
    CHECK(bf16_off_float64(xh, wh, &bh, biased.d, M, N, K, 1) == 0);
    same(I, [&](fp4fuse::matrix_view<__nv_bfloat16> v) { return fp4fuse::gemm::swiglu_bf16<act_t>{v, act_t{}}; }, "swiglu_bf16");
    using clamped = fp4fuse::activation::swiglu_clamped;
    same(I, [&](fp4fuse::matrix_view<__nv_bfloat16> v) { return fp4fuse::gemm::swiglu_bf16<clamped, fp4fuse::column_bias>{v, clamped{}, bias}; },
         "swiglu_bf16, clamped, with a column bias");
  }
  // The fused NVFP4 epilogue's blocks span 32 gate/up columns: a 64 x 48 plan is refused, with a
  // sentence, and nothing is written.
  gpu_problem p(8, 128, 96, "64 x 48 refused");
  FP4FUSE_TEST_CUDA(cudaMemset(p.S.as<void>(), 0, 4));
  for (const launch_plan& plan : {plan48, plan48_split}) {
    const fp4fuse::result r = l1_gemm::run(p.args(), l1_gemm::flow::fused_nvfp4<>{}, act_t{}, fp4fuse::gemm::engine::wgmma, nullptr, &plan);
    INFO(r.message());
    CHECK(r.code == fp4fuse::status::bad_shape);
    CHECK(std::string(r.message()).find("granule") != std::string::npos);
  }
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  for (const device_buffer* out : {&p.packed, &p.scales}) {
    const auto bytes = out->download();
    CHECK(std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == poison; }));
  }
}

TEST_CASE("dense L1 GEMM [gpu]: split-K launches on two streams at once", "[gpu][gemm][dense]") {
  if (!wgmma_here("the split-K workspace is not exercised")) return;
  // Two problems, each split 4 ways (16 and 24 CTAs: both fit on the chip at once), launched in
  // turn on two streams, 50 times each without waiting, each launch into its own output; every
  // output must equal, bit for bit, that problem's launch run alone (the splits are summed in a
  // fixed order). With one workspace per device, as `launch` kept before, this fails: tile t of
  // both problems uses the same partial slots and arrival counters, so while the two kernels run
  // side by side one's splits count towards the other's arrivals (a split finds itself last before
  // its own tile's other splits have written, and sums the other problem's fragments), and a
  // counter reset by one kernel drops the other's arrivals (that tile is never summed and keeps
  // its poison). With a workspace per stream, each kernel counts only its own splits.
  constexpr int pairs = 50;
  split_problem a(128, 512, 16384, pairs + 1, "l1 split-K a"), b(192, 384, 12288, pairs + 1, "l1 split-K b");
  REQUIRE(static_cast<bool>(a.run(pairs, nullptr)));  // the references, one at a time
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  REQUIRE(static_cast<bool>(b.run(pairs, nullptr)));
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  REQUIRE(a.written(pairs));
  REQUIRE(b.written(pairs));
  {
    const stream_pair s;
    for (int i = 0; i < pairs; ++i) {
      REQUIRE(static_cast<bool>(a.run(i, s.a)));
      REQUIRE(static_cast<bool>(b.run(i, s.b)));
    }
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  }
  CHECK(a.differing(pairs, pairs) == 0);
  CHECK(b.differing(pairs, pairs) == 0);
  CHECK((a.out.guard_intact() && b.out.guard_intact()));
}

TEST_CASE("dense L1 GEMM [gpu]: split-K with the caller's workspace, on two streams and in a CUDA graph", "[gpu][gemm][dense]") {
  if (!wgmma_here("the split-K workspace is not exercised")) return;
  using fp4fuse::gemm::sm90::workspace;
  constexpr int pairs = 20;
  split_problem a(128, 512, 16384, pairs + 1, "l1 split-K own a"), b(192, 384, 12288, pairs + 1, "l1 split-K own b");
  REQUIRE(static_cast<bool>(a.run(pairs, nullptr)));  // the references, with the workspace `launch` keeps
  REQUIRE(static_cast<bool>(b.run(pairs, nullptr)));
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());

  // One workspace per problem, sized for its plan; its owner (this test) zeroes the counters once.
  const fp4fuse::gemm::sm90::workspace_size need_a = workspace::size_for(split_plan, a.M, a.N, a.K);
  const fp4fuse::gemm::sm90::workspace_size need_b = workspace::size_for(split_plan, b.M, b.N, b.K);
  REQUIRE(need_a.counter_count > 0);
  REQUIRE(need_b.counter_count > 0);
  device_buffer partials_a(need_a.partial_floats * 4), counters_a(need_a.counter_count * 4);
  device_buffer partials_b(need_b.partial_floats * 4), counters_b(need_b.counter_count * 4);
  FP4FUSE_TEST_CUDA(cudaMemset(counters_a.as<void>(), 0, counters_a.bytes()));
  FP4FUSE_TEST_CUDA(cudaMemset(counters_b.as<void>(), 0, counters_b.bytes()));
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  const workspace ws_a{partials_a.as<float>(), counters_a.as<unsigned>(), need_a.partial_floats, need_a.counter_count};
  const workspace ws_b{partials_b.as<float>(), counters_b.as<unsigned>(), need_b.partial_floats, need_b.counter_count};

  const stream_pair s;
  for (int i = 0; i < pairs; ++i) {  // each launch relies on the counters the one before left zero
    REQUIRE(static_cast<bool>(a.run(i, s.a, &ws_a)));
    REQUIRE(static_cast<bool>(b.run(i, s.b, &ws_b)));
  }
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  CHECK(a.differing(pairs, pairs) == 0);
  CHECK(b.differing(pairs, pairs) == 0);

  // Refused, nothing launched: a workspace too small for the plan, or without memory.
  workspace small = ws_a;
  small.counter_count -= 1;
  const workspace none{};
  CHECK(a.run(0, s.a, &small).code == fp4fuse::status::bad_shape);
  CHECK(b.run(0, s.b, &ws_a).code == fp4fuse::status::bad_shape);  // a's: 4 tiles, b has 6
  CHECK(a.run(0, s.a, &none).code == fp4fuse::status::null_pointer);
  workspace misaligned = ws_a;  // float stores and unsigned atomics: 4-byte aligned
  misaligned.partials = reinterpret_cast<float*>(reinterpret_cast<char*>(ws_a.partials) + 2);
  CHECK(a.run(0, s.a, &misaligned).code == fp4fuse::status::misaligned_pointer);
  misaligned = ws_a;
  misaligned.counters = reinterpret_cast<unsigned*>(reinterpret_cast<char*>(ws_a.counters) + 1);
  CHECK(a.run(0, s.a, &misaligned).code == fp4fuse::status::misaligned_pointer);

  // Captured in a CUDA graph: refused with the workspace `launch` keeps (a graph would hold its
  // address), run with the caller's, three replays, each equal to the reference.
  cudaGraph_t graph = nullptr;
  FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(s.a, cudaStreamCaptureModeRelaxed));
  const fp4fuse::result refused = a.run(0, s.a);
  FP4FUSE_TEST_CUDA(cudaStreamEndCapture(s.a, &graph));
  if (graph != nullptr) FP4FUSE_TEST_CUDA(cudaGraphDestroy(graph));
  CHECK(refused.code == fp4fuse::status::cuda_error);
  CHECK(refused.cuda == cudaErrorStreamCaptureUnsupported);

  FP4FUSE_TEST_CUDA(cudaMemset(a.out.as<void>(), poison, static_cast<std::size_t>(a.M) * a.N * 2));  // output 0 poisoned again
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  graph = nullptr;
  FP4FUSE_TEST_CUDA(cudaStreamBeginCapture(s.a, cudaStreamCaptureModeRelaxed));
  const fp4fuse::result captured = a.run(0, s.a, &ws_a);
  FP4FUSE_TEST_CUDA(cudaStreamEndCapture(s.a, &graph));
  REQUIRE(static_cast<bool>(captured));
  REQUIRE(graph != nullptr);
  cudaGraphExec_t exec = nullptr;
  FP4FUSE_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < 3; ++r) FP4FUSE_TEST_CUDA(cudaGraphLaunch(exec, s.a));
  FP4FUSE_TEST_CUDA(cudaStreamSynchronize(s.a));
  FP4FUSE_TEST_CUDA(cudaGraphExecDestroy(exec));
  FP4FUSE_TEST_CUDA(cudaGraphDestroy(graph));
  CHECK(a.written(0));
  CHECK(a.differing(1, pairs) == 0);
  CHECK((a.out.guard_intact() && b.out.guard_intact() && partials_a.guard_intact() && counters_a.guard_intact()));
}

TEST_CASE("dense L1 GEMM [gpu]: invalid arguments are refused and touch no memory", "[gpu][gemm][dense]") {
  gpu_problem p(64, 128, 64, "l1 invalid");
  FP4FUSE_TEST_CUDA(cudaMemset(p.S.as<void>(), 0, 4));
  const auto unchanged = [&] {
    const auto packed = p.packed.download(), scales = p.scales.download(), gu = p.gate_up.download(), h = p.h.download();
    auto all_poison = [](const std::vector<unsigned char>& v) {
      return std::all_of(v.begin(), v.end(), [](unsigned char c) { return c == poison; });
    };
    return all_poison(packed) && all_poison(scales) && all_poison(gu) && all_poison(h);
  };
  const auto expect = [&](l1_gemm::problem a, fp4fuse::status want, const char* what) {
    INFO(what);
    for (fp4fuse::gemm::engine e : engines_here()) {
      CHECK(l1_gemm::run(a, l1_gemm::flow::interleaved_bf16{}, act_t{}, e).code == want);
      CHECK(l1_gemm::run(a, l1_gemm::flow::compact_bf16{}, act_t{}, e).code == want);
      CHECK(l1_gemm::run(a, l1_gemm::flow::fused_nvfp4<>{}, act_t{}, e).code == want);
    }
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
    CHECK(unchanged());
  };
  using fp4fuse::status;
  l1_gemm::problem a = p.args();
  a.x = nullptr;
  expect(a, status::null_pointer, "x null");
  a = p.args();
  a.scales = nullptr;
  expect(a, status::null_pointer, "scales null");
  a = p.args();
  a.global_encode_scale = nullptr;
  expect(a, status::null_pointer, "S null");
  a = p.args();
  a.w = p.w.as<__nv_bfloat16>() + 1;
  expect(a, status::misaligned_pointer, "w misaligned");
  a = p.args();
  a.packed = p.packed.as<std::uint8_t>() + 4;
  expect(a, status::misaligned_pointer, "packed misaligned");
  a = p.args();
  a.T = 0;
  expect(a, status::bad_shape, "T = 0");
  a = p.args();
  a.I = 40;
  expect(a, status::not_multiple_of_block, "I % 16 != 0");
  a = p.args();
  a.H = 60;
  expect(a, status::not_multiple_of_block, "H % 8 != 0");
  // Flow-specific intermediates.
  a = p.args();
  a.gate_up = nullptr;
  CHECK(l1_gemm::run(a, l1_gemm::flow::interleaved_bf16{}, act_t{}, fp4fuse::gemm::engine::automatic).code == status::null_pointer);
  a = p.args();
  a.h = p.h.as<__nv_bfloat16>() + 1;
  CHECK(l1_gemm::run(a, l1_gemm::flow::compact_bf16{}, act_t{}, fp4fuse::gemm::engine::automatic).code == status::misaligned_pointer);
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  CHECK(unchanged());
  if (!wgmma_here("the forced plan's unit count is not checked")) return;
  // A forced plan whose tiles x K splits pass the kernels' bound: M = 2^19, N = 2^20 pass
  // check_gemm's bound (drawn for 128 x 128 tiles), but 64 x 32 tiles split 16 ways give 2^32
  // units. Refused with a sentence before any launch: the pointers are never dereferenced.
  const fp4fuse::gemm::sm90::launch_plan small_tiles{32, 16, 0, 1, 0, 0, 64};
  const int M = 1 << 19, N = 1 << 20, K = 1024;
  __nv_bfloat16* nowhere = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{1} << 44);
  const fp4fuse::result r = fp4fuse::gemm::gemm(nowhere, nowhere, M, N, K, fp4fuse::gemm::store_bf16{{nowhere, M, N, N}},
                                                fp4fuse::gemm::engine::wgmma, nullptr, &small_tiles);
  INFO(r.message());
  CHECK(r.code == status::bad_shape);
  CHECK(std::string(r.message()).find("4294967296 work units, more than the kernels' 2^30") != std::string::npos);
  CHECK(cudaGetLastError() == cudaSuccess);
}
