// swiglu_quantize and swiglu against host twins for every gate/up layout, activation, intermediate
// rounding and dtype; the bf16-intermediate flow equals swiglu(bf16) followed by quantize.
#include <fp4fuse/kernels/quantize.cuh>
#include <fp4fuse/kernels/swiglu_quantize.cuh>

#include <random>

#include "kernel_test_support.cuh"

using namespace fp4fuse_test;
namespace format = fp4fuse::format;
namespace gate_up = fp4fuse::gate_up;
namespace activation = fp4fuse::activation;
namespace intermediate = fp4fuse::intermediate;
namespace scale_layout = fp4fuse::scale_layout;

namespace {

struct shape {
  std::int64_t rows, I, ld_extra;
};
const shape shapes[] = {{1, 64, 0}, {3, 128, 8}, {130, 192, 0}, {257, 320, 16}, {64, 2048, 0}};

template <class GateUp, class Activation, class Intermediate, class T>
std::vector<float> host_activation(const std::vector<T>& in, const shape& s, std::int64_t ld_in, const Activation& act) {
  std::vector<float> h(static_cast<std::size_t>(s.rows * s.I));
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t c = 0; c < s.I; ++c) {
      const float g = as_float(in[static_cast<std::size_t>(r * ld_in + GateUp::gate_col(c, s.I))]);
      const float u = as_float(in[static_cast<std::size_t>(r * ld_in + GateUp::up_col(c, s.I))]);
      float v = act.apply(g, u);
      if constexpr (std::is_same_v<Intermediate, intermediate::bf16>) v = __bfloat162float(__float2bfloat16_rn(v));
      h[static_cast<std::size_t>(r * s.I + c)] = v;
    }
  }
  return h;
}

template <class Format, class Layout, class GateUp, class Intermediate, class Activation, class T = __nv_bfloat16>
void check_swiglu_quantize(const Activation& act, const char* salt) {
  constexpr int B = Format::block_size;
  auto g = rng(salt);
  for (const shape& s : shapes) {
    if (s.I % B != 0 || s.I % fp4fuse::detail::granule_of<GateUp> != 0) continue;
    const std::int64_t ld_in = 2 * s.I + s.ld_extra;
    const std::int64_t ld_out = s.I / 2 + (s.ld_extra ? 16 : 0);
    const std::vector<T> in = to_elements<T>(make_matrix(s.rows, 2 * s.I, ld_in, g, 3.0f));
    const std::vector<float> h = host_activation<GateUp, Activation, Intermediate>(in, s, ld_in, act);
    float hmax = 0.0f;
    for (float v : h) if (std::isfinite(v)) hmax = std::max(hmax, std::fabs(v));
    const float S = fp4fuse::nvfp4_global_encode_scale(hmax);
    const Layout layout{s.rows, s.I / B};
    device_buffer d_in(in.size() * sizeof(T)), d_out(static_cast<std::size_t>(s.rows * ld_out)),
        d_scales(static_cast<std::size_t>(layout.size_bytes())), d_S(4);
    d_in.upload(in.data(), in.size() * sizeof(T));
    d_S.upload(&S, 4);
    const fp4fuse::matrix_view<const T> gu{d_in.as<T>(), s.rows, 2 * s.I, ld_in};
    const fp4fuse::quantized_matrix<Format, Layout> out{d_out.as<std::uint8_t>(), ld_out, d_scales.as<std::uint8_t>(), layout};
    const fp4fuse::result r =
        fp4fuse::swiglu_quantize<GateUp, Intermediate>(gu, out, tensor_scale<Format>(d_S.as<float>()), act);
    INFO(salt << " " << type_name<T>() << " M=" << s.rows << " I=" << s.I << ": " << r.message());
    REQUIRE(static_cast<bool>(r));
    FP4FUSE_TEST_LAUNCHED();

    std::vector<unsigned char> want_packed(static_cast<std::size_t>(s.rows * ld_out), poison);
    std::vector<unsigned char> want_scales(static_cast<std::size_t>(layout.size_bytes()), 0);
    const auto codec = fp4fuse::make_block_codec<Format>(S);
    for (std::int64_t row = 0; row < s.rows; ++row) {
      for (std::int64_t b = 0; b < s.I / B; ++b) {
        float x[B];
        for (int i = 0; i < B; ++i) x[i] = h[static_cast<std::size_t>(row * s.I + b * B + i)];
        const fp4fuse::quantized_block<Format> q = codec.quantize(x);
        want_scales[static_cast<std::size_t>(layout.offset(row, b))] = q.scale;
        std::memcpy(&want_packed[static_cast<std::size_t>(row * ld_out + b * B / 2)], q.packed, sizeof q.packed);
      }
    }
    CHECK(d_out.download() == want_packed);
    CHECK(d_scales.download() == want_scales);
    CHECK(d_out.guard_intact());
    CHECK(d_scales.guard_intact());
  }
}

/// The compact output, and the bf16-intermediate identity: swiglu_quantize<bf16 intermediate>
/// == quantize(swiglu<bf16>).
template <class GateUp, class Activation, class T>
void check_compact_and_parity(const Activation& act, const char* salt) {
  using F = format::nvfp4<>;
  using L = scale_layout::swizzled_128x4;
  auto g = rng(salt);
  for (const shape& s : shapes) {
    if (s.I % fp4fuse::detail::granule_of<GateUp> != 0) continue;
    const std::int64_t ld_in = 2 * s.I + s.ld_extra;
    const std::vector<T> in = to_elements<T>(make_matrix(s.rows, 2 * s.I, ld_in, g, 3.0f));
    const std::vector<float> h = host_activation<GateUp, Activation, intermediate::fp32>(in, s, ld_in, act);
    const std::int64_t ld_h = s.I + 8;
    device_buffer d_in(in.size() * sizeof(T)), d_h(static_cast<std::size_t>(s.rows * ld_h) * 2);
    d_in.upload(in.data(), in.size() * sizeof(T));
    const fp4fuse::matrix_view<const T> gu{d_in.as<T>(), s.rows, 2 * s.I, ld_in};
    INFO(salt << " M=" << s.rows << " I=" << s.I);
    REQUIRE(static_cast<bool>(fp4fuse::gated_activation<GateUp>(gu, fp4fuse::matrix_view<__nv_bfloat16>{d_h.as<__nv_bfloat16>(), s.rows, s.I, ld_h}, fp4fuse::global_scale::none{}, act)));
    FP4FUSE_TEST_LAUNCHED();
    std::vector<unsigned char> want(d_h.bytes(), poison);
    for (std::int64_t r = 0; r < s.rows; ++r) {
      for (std::int64_t c = 0; c < s.I; ++c) {
        const __nv_bfloat16 v = __float2bfloat16_rn(h[static_cast<std::size_t>(r * s.I + c)]);
        std::memcpy(&want[static_cast<std::size_t>(r * ld_h + c) * 2], &v, 2);
      }
    }
    CHECK(same_elements_nan_equal<__nv_bfloat16>(d_h.download(), want) == 0);
    CHECK(d_h.guard_intact());

    // Flow 2 (compact bf16 then quantize) vs fused with the bf16 intermediate: same bytes.
    float hmax = 0.0f;
    for (float v : h) if (std::isfinite(v)) hmax = std::max(hmax, std::fabs(v));
    const float S = fp4fuse::nvfp4_global_encode_scale(hmax);
    const L layout{s.rows, s.I / 16};
    device_buffer d_S(4), p1(static_cast<std::size_t>(s.rows * s.I / 2)), p2(static_cast<std::size_t>(s.rows * s.I / 2)),
        s1(static_cast<std::size_t>(layout.size_bytes())), s2(static_cast<std::size_t>(layout.size_bytes()));
    d_S.upload(&S, 4);
    REQUIRE(static_cast<bool>(fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{d_h.as<__nv_bfloat16>(), s.rows, s.I, ld_h},
                                                 fp4fuse::quantized_matrix<F, L>{p1.as<std::uint8_t>(), s.I / 2, s1.as<std::uint8_t>(), layout},
                                                 fp4fuse::global_scale::per_tensor{d_S.as<float>()})));
    REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<GateUp, intermediate::bf16>(
        gu, fp4fuse::quantized_matrix<F, L>{p2.as<std::uint8_t>(), s.I / 2, s2.as<std::uint8_t>(), layout}, fp4fuse::global_scale::per_tensor{d_S.as<float>()}, act)));
    FP4FUSE_TEST_LAUNCHED();
    CHECK(p1.download() == p2.download());
    CHECK(s1.download() == s2.download());
  }
}


/// act(gate, up) on the device, element by element: the reference for the fast activations, whose
/// device bits differ from the host's.
template <class GateUp, class Activation, class T>
__global__ void device_activation_kernel(const T* in, std::int64_t rows, std::int64_t I, std::int64_t ld, Activation act, float* h) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows * I) return;
  const std::int64_t r = i / I, c = i % I;
  h[i] = act.apply(fp4fuse::detail::to_float(in[r * ld + GateUp::gate_col(c, I)]), fp4fuse::detail::to_float(in[r * ld + GateUp::up_col(c, I)]));
}

/// Gate/up as a model's: gate ~ N(0, 2), up ~ N(0, 1), bfloat16, in the GateUp layout.
template <class GateUp>
std::vector<__nv_bfloat16> realistic_gate_up(std::int64_t rows, std::int64_t I, std::mt19937_64& g) {
  std::normal_distribution<float> gate(0.0f, 2.0f), up(0.0f, 1.0f);
  std::vector<__nv_bfloat16> in(static_cast<std::size_t>(rows * 2 * I));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < I; ++c) {
      in[static_cast<std::size_t>(r * 2 * I + GateUp::gate_col(c, I))] = __float2bfloat16_rn(gate(g));
      in[static_cast<std::size_t>(r * 2 * I + GateUp::up_col(c, I))] = __float2bfloat16_rn(up(g));
    }
  }
  return in;
}

/// A fast activation through swiglu_quantize: bit-identical to the device's own activation followed
/// by the block codec (every byte checked, on the test shapes with special values), per tensor and
/// with per-row global scales; and on model-like data, the fraction of NVFP4 element codes and scale
/// bytes that differ from the exact activation's.
template <class GateUp, class Fast, class Exact>
void check_fast_activation(const Fast& fast, const Exact& exact, const char* salt) {
  using F = format::nvfp4<>;
  using L = scale_layout::swizzled_128x4;
  using T = __nv_bfloat16;
  auto g = rng(salt);
  struct case_t {
    std::int64_t rows, I;
    bool realistic;
  };
  std::size_t codes = 0, codes_differ = 0, scales = 0, scales_differ = 0;
  for (const case_t cs : {case_t{3, 128, false}, case_t{130, 192, false}, case_t{257, 320, false}, case_t{64, 2048, false},
                          case_t{1024, 2048, true}, case_t{512, 2880, true}}) {
    if (cs.I % fp4fuse::detail::granule_of<GateUp> != 0) continue;
    const std::int64_t ld_in = 2 * cs.I;
    const std::vector<T> in = cs.realistic ? realistic_gate_up<GateUp>(cs.rows, cs.I, g) : to_elements<T>(make_matrix(cs.rows, 2 * cs.I, ld_in, g, 3.0f));
    const std::vector<float> h_exact = host_activation<GateUp, Exact, intermediate::fp32>(in, shape{cs.rows, cs.I, 0}, ld_in, exact);
    float hmax = 0.0f;
    for (float v : h_exact) if (std::isfinite(v)) hmax = std::max(hmax, std::fabs(v));
    const float S = fp4fuse::nvfp4_global_encode_scale(hmax);
    const L layout{cs.rows, cs.I / 16};
    const std::size_t packed_bytes = static_cast<std::size_t>(cs.rows * cs.I / 2);
    device_buffer d_in(in.size() * sizeof(T)), d_h(static_cast<std::size_t>(cs.rows * cs.I) * 4), d_S(4), p_fast(packed_bytes),
        s_fast(static_cast<std::size_t>(layout.size_bytes())), p_exact(packed_bytes), s_exact(static_cast<std::size_t>(layout.size_bytes()));
    d_in.upload(in.data(), in.size() * sizeof(T));
    d_S.upload(&S, 4);
    const fp4fuse::matrix_view<const T> gu{d_in.as<T>(), cs.rows, 2 * cs.I, ld_in};
    INFO(salt << " M=" << cs.rows << " I=" << cs.I);
    REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<GateUp>(gu, fp4fuse::quantized_matrix<F, L>{p_fast.as<std::uint8_t>(), cs.I / 2, s_fast.as<std::uint8_t>(), layout}, fp4fuse::global_scale::per_tensor{d_S.as<float>()},
                                                               fast)));
    REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<GateUp>(gu, fp4fuse::quantized_matrix<F, L>{p_exact.as<std::uint8_t>(), cs.I / 2, s_exact.as<std::uint8_t>(), layout}, fp4fuse::global_scale::per_tensor{d_S.as<float>()},
                                                               exact)));
    device_activation_kernel<GateUp><<<static_cast<unsigned>((cs.rows * cs.I + 255) / 256), 256>>>(d_in.as<T>(), cs.rows, cs.I, ld_in, fast, d_h.as<float>());
    FP4FUSE_TEST_LAUNCHED();
    std::vector<float> h_fast(static_cast<std::size_t>(cs.rows * cs.I));
    const std::vector<unsigned char> hb = d_h.download();
    std::memcpy(h_fast.data(), hb.data(), hb.size());
    // The device h quantized on the host, row r's blocks with block_codec(S_of_row(r)).
    const auto host_quantize_h = [&](const auto& S_of_row, std::vector<unsigned char>& packed, std::vector<unsigned char>& scales) {
      packed.assign(packed_bytes, poison);
      scales.assign(static_cast<std::size_t>(layout.size_bytes()), 0);
      for (std::int64_t r = 0; r < cs.rows; ++r) {
        const fp4fuse::block_codec<F> codec(S_of_row(r));
        for (std::int64_t b = 0; b < cs.I / 16; ++b) {
          float x[16];
          for (int i = 0; i < 16; ++i) x[i] = h_fast[static_cast<std::size_t>(r * cs.I + b * 16 + i)];
          const auto q = codec.quantize(x);
          scales[static_cast<std::size_t>(layout.offset(r, b))] = q.scale;
          std::memcpy(&packed[static_cast<std::size_t>(r * cs.I / 2 + b * 8)], q.packed, 8);
        }
      }
    };
    std::vector<unsigned char> want_packed, want_scales;
    host_quantize_h([&](std::int64_t) { return S; }, want_packed, want_scales);
    const std::vector<unsigned char> got_fast = p_fast.download(), got_fast_scales = s_fast.download();
    CHECK(got_fast == want_packed);
    CHECK(got_fast_scales == want_scales);
    CHECK(p_fast.guard_intact());
    CHECK(s_fast.guard_intact());
    {
      // Per-row global scales with the fast activation: S_r from the device h's row amax (NaN
      // ignored), each block with block_codec(S_r).
      device_buffer p_row(packed_bytes), s_row(static_cast<std::size_t>(layout.size_bytes())), d_rs(static_cast<std::size_t>(cs.rows) * 4);
      REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<GateUp>(
          gu, fp4fuse::quantized_matrix<F, L>{p_row.as<std::uint8_t>(), cs.I / 2, s_row.as<std::uint8_t>(), layout}, fp4fuse::global_scale::per_row{d_rs.as<float>()},
          fast)));
      FP4FUSE_TEST_LAUNCHED();
      std::vector<float> row_S(static_cast<std::size_t>(cs.rows));
      for (std::int64_t r = 0; r < cs.rows; ++r) {
        float amax = 0.0f;
        for (std::int64_t c = 0; c < cs.I; ++c) {
          const float v = std::fabs(h_fast[static_cast<std::size_t>(r * cs.I + c)]);
          if (!std::isnan(v)) amax = std::max(amax, v);
        }
        row_S[static_cast<std::size_t>(r)] = fp4fuse::nvfp4_global_encode_scale(amax);
      }
      std::vector<unsigned char> row_packed, row_scales;
      host_quantize_h([&](std::int64_t r) { return row_S[static_cast<std::size_t>(r)]; }, row_packed, row_scales);
      check_row_scaled_outputs(p_row, row_packed, s_row, row_scales, d_rs, row_S);
    }
    if (cs.realistic) {
      const std::vector<unsigned char> got_exact = p_exact.download(), got_exact_scales = s_exact.download();
      for (std::size_t i = 0; i < packed_bytes; ++i) {
        codes += 2;
        codes_differ += ((got_fast[i] ^ got_exact[i]) & 0x0F) != 0;
        codes_differ += ((got_fast[i] ^ got_exact[i]) & 0xF0) != 0;
      }
      for (std::int64_t r = 0; r < cs.rows; ++r) {
        for (std::int64_t b = 0; b < cs.I / 16; ++b) {
          const auto o = static_cast<std::size_t>(layout.offset(r, b));
          ++scales;
          scales_differ += got_fast_scales[o] != got_exact_scales[o];
        }
      }
    }
  }
  const double code_fraction = double(codes_differ) / double(codes), scale_fraction = double(scales_differ) / double(scales);
  WARN(salt << ": fast vs exact activation, model-like data: " << codes_differ << " of " << codes << " NVFP4 codes differ ("
            << code_fraction * 100 << "%), " << scales_differ << " of " << scales << " scale bytes (" << scale_fraction * 100 << "%)");
  // Predicted from the bound (a few 1e-7 relative): a code changes only where act*up lies that close
  // to an E2M1 rounding boundary (or a scale to an E4M3 one), about 1e-6 of the elements (docs/NUMERICS.md).
  CHECK(code_fraction < 1e-3);
  CHECK(scale_fraction < 1e-3);
}
}  // namespace

TEST_CASE("swiglu_quantize [gpu]: every gate/up layout with SiLU, NVFP4, bit-exact", "[gpu][swiglu]") {
  using F = format::nvfp4<>;
  using L = scale_layout::swizzled_128x4;
  check_swiglu_quantize<F, L, gate_up::split_gate_first, intermediate::fp32>(activation::swiglu{}, "sq split gate");
  check_swiglu_quantize<F, L, gate_up::split_up_first, intermediate::fp32>(activation::swiglu{}, "sq split up");
  check_swiglu_quantize<F, L, gate_up::interleaved<1>, intermediate::fp32>(activation::swiglu{}, "sq il1");
  check_swiglu_quantize<F, L, gate_up::interleaved<2>, intermediate::fp32>(activation::swiglu{}, "sq il2");
  check_swiglu_quantize<F, L, gate_up::interleaved<4>, intermediate::fp32>(activation::swiglu{}, "sq il4");
  check_swiglu_quantize<F, L, gate_up::interleaved<8>, intermediate::fp32, activation::swiglu, __nv_bfloat16>(activation::swiglu{}, "sq il8");
  check_swiglu_quantize<F, L, gate_up::interleaved<16>, intermediate::fp32>(activation::swiglu{}, "sq il16");
  check_swiglu_quantize<F, L, gate_up::interleaved<32>, intermediate::fp32>(activation::swiglu{}, "sq il32");
  check_swiglu_quantize<F, scale_layout::linear, gate_up::interleaved<64>, intermediate::fp32>(activation::swiglu{}, "sq il64");
}

TEST_CASE("swiglu_quantize [gpu]: activations, intermediates, dtypes, MXFP4", "[gpu][swiglu]") {
  using F = format::nvfp4<>;
  using L = scale_layout::swizzled_128x4;
  check_swiglu_quantize<F, L, gate_up::interleaved<1>, intermediate::fp32, activation::swiglu_clamped, __nv_bfloat16>(activation::swiglu_clamped{1.702f, 7.0f}, "sq gptoss");
  check_swiglu_quantize<F, L, gate_up::interleaved<8>, intermediate::fp32, activation::geglu_tanh, __half>(activation::geglu_tanh{}, "sq gelu f16");
  check_swiglu_quantize<F, L, gate_up::split_gate_first, intermediate::bf16, activation::swiglu, float>(activation::swiglu{}, "sq bf16 f32");
  check_swiglu_quantize<format::nvfp4<fp4fuse::recipe::te_exact>, scale_layout::linear, gate_up::interleaved<8>, intermediate::bf16, activation::swiglu, __nv_bfloat16>(activation::swiglu{}, "sq bf16 lin");
  check_swiglu_quantize<format::mxfp4<>, L, gate_up::interleaved<8>, intermediate::fp32, activation::swiglu, __nv_bfloat16>(activation::swiglu{}, "sq mx");
  check_swiglu_quantize<format::mxfp4<fp4fuse::recipe::mx_round_up>, scale_layout::linear, gate_up::split_up_first, intermediate::fp32, activation::swiglu_clamped, __nv_bfloat16>(activation::swiglu_clamped{}, "sq mx up");
}

TEST_CASE("swiglu [gpu]: compact bf16 output, and bf16-intermediate fused == swiglu + quantize", "[gpu][swiglu]") {
  check_compact_and_parity<gate_up::interleaved<8>, activation::swiglu, __nv_bfloat16>(activation::swiglu{}, "parity il8");
  check_compact_and_parity<gate_up::split_gate_first, activation::swiglu, __nv_bfloat16>(activation::swiglu{}, "parity split");
  check_compact_and_parity<gate_up::interleaved<1>, activation::swiglu_clamped, __nv_bfloat16>(activation::swiglu_clamped{}, "parity gptoss");
  check_compact_and_parity<gate_up::split_up_first, activation::geglu_tanh, float>(activation::geglu_tanh{}, "parity gelu");
}

TEST_CASE("swiglu_quantize [gpu]: the fast activations equal the device activation + block codec; codes that differ from the exact ones",
          "[gpu][swiglu]") {
  check_fast_activation<gate_up::interleaved<8>>(activation::swiglu_fast{}, activation::swiglu{}, "fast silu il8");
  check_fast_activation<gate_up::split_gate_first>(activation::swiglu_fast{}, activation::swiglu{}, "fast silu split");
  check_fast_activation<gate_up::interleaved<1>>(activation::swiglu_clamped_fast{}, activation::swiglu_clamped{}, "fast gptoss il1");
}

namespace {

/// Per-row global scales through swiglu_quantize against the host composition: h per element,
/// S_r from the row's max |h| (NaN ignored), each block with block_codec(S_r).
template <class GateUp, class Intermediate, class Activation, class T = __nv_bfloat16>
void check_swiglu_per_row(const Activation& act, const char* salt) {
  using F = format::nvfp4<>;
  using L = scale_layout::swizzled_128x4;
  auto g = rng(salt);
  // The test shapes, plus rows of 180 and 511 blocks: CTAs of 64, 128 and 256 threads; beyond 512
  // blocks the two-pass path: 513 blocks (padded to 516) over a ragged 37 rows, and Mixtral's 896.
  const shape row_shapes[] = {shapes[0], shapes[1], shapes[2], shapes[3], shapes[4], {67, 2880, 0}, {3, 8176, 16}, {37, 8208, 16}, {5, 14336, 0}};
  for (const shape& s : row_shapes) {
    if (s.I % fp4fuse::detail::granule_of<GateUp> != 0) continue;
    const std::int64_t ld_in = 2 * s.I + s.ld_extra;
    const std::int64_t ld_out = s.I / 2 + (s.ld_extra ? 16 : 0);
    const std::vector<T> in = to_elements<T>(make_matrix(s.rows, 2 * s.I, ld_in, g, 3.0f));
    const std::vector<float> h = host_activation<GateUp, Activation, Intermediate>(in, s, ld_in, act);
    const L layout{s.rows, s.I / 16};
    device_buffer d_in(in.size() * sizeof(T)), d_out(static_cast<std::size_t>(s.rows * ld_out)),
        d_scales(static_cast<std::size_t>(layout.size_bytes())), d_rs(static_cast<std::size_t>(s.rows) * 4);
    d_in.upload(in.data(), in.size() * sizeof(T));
    const fp4fuse::result r = fp4fuse::swiglu_quantize<GateUp, Intermediate>(
        fp4fuse::matrix_view<const T>{d_in.as<T>(), s.rows, 2 * s.I, ld_in}, fp4fuse::quantized_matrix<F, L>{d_out.as<std::uint8_t>(), ld_out, d_scales.as<std::uint8_t>(), layout},
        fp4fuse::global_scale::per_row{d_rs.as<float>()},
        act);
    INFO(salt << " M=" << s.rows << " I=" << s.I << ": " << r.message());
    REQUIRE(static_cast<bool>(r));
    FP4FUSE_TEST_LAUNCHED();
    std::vector<unsigned char> want_packed(static_cast<std::size_t>(s.rows * ld_out), poison);
    std::vector<unsigned char> want_scales(static_cast<std::size_t>(layout.size_bytes()), 0);
    std::vector<float> want_S(static_cast<std::size_t>(s.rows));
    for (std::int64_t row = 0; row < s.rows; ++row) {
      float amax = 0.0f;
      for (std::int64_t c = 0; c < s.I; ++c) {
        const float v = std::fabs(h[static_cast<std::size_t>(row * s.I + c)]);
        if (!std::isnan(v)) amax = std::max(amax, v);
      }
      const float S = fp4fuse::nvfp4_global_encode_scale(amax);
      want_S[static_cast<std::size_t>(row)] = S;
      const fp4fuse::block_codec<F> codec(S);
      for (std::int64_t b = 0; b < s.I / 16; ++b) {
        float x[16];
        for (int i = 0; i < 16; ++i) x[i] = h[static_cast<std::size_t>(row * s.I + b * 16 + i)];
        const auto q = codec.quantize(x);
        want_scales[static_cast<std::size_t>(layout.offset(row, b))] = q.scale;
        std::memcpy(&want_packed[static_cast<std::size_t>(row * ld_out + b * 8)], q.packed, 8);
      }
    }
    check_row_scaled_outputs(d_out, want_packed, d_scales, want_scales, d_rs, want_S);
  }
}

}  // namespace

TEST_CASE("swiglu_quantize [gpu]: per-row global scales equal the host composition, every byte and row scale checked", "[gpu][swiglu]") {
  check_swiglu_per_row<gate_up::interleaved<8>, intermediate::fp32>(activation::swiglu{}, "row il8");
  check_swiglu_per_row<gate_up::interleaved<1>, intermediate::fp32>(activation::swiglu_clamped{}, "row gptoss");
  check_swiglu_per_row<gate_up::split_gate_first, intermediate::bf16, activation::swiglu, __half>(activation::swiglu{}, "row split bf16 f16");
  check_swiglu_per_row<gate_up::split_up_first, intermediate::fp32, activation::geglu_tanh, float>(activation::geglu_tanh{}, "row split up f32");
}
