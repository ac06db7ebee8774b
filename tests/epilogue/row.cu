// The row adapter of the fused epilogue (epilogue/row.cuh) with its registers filled
// from memory as `tcgen05.ld` 32x32b leaves them (`tcgen05_32x32b_fragment`; it is a layout, so
// it runs on Hopper), against the standalone swiglu_quantize kernel on the same fp32 gate/up
// values: NVFP4 and MXFP4, gate/up interleaved by 1, 8 and 16 and in separate accumulators, with
// and without a bias, through the direct and the staged (TMA bulk copy) sinks; every packed byte
// and every byte of the scale tensor, padding included, over outputs poisoned with 0xA5. The
// hand-back form against the host block_codec on the device's own activations, and the output
// amax against the exact maximum.
#include <fp4fuse/epilogue/row.cuh>
#include <fp4fuse/epilogue/tcgen05_fragment.cuh>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;

namespace {

using layout_t = fp4fuse::scale_layout::swizzled_128x4;
using nvfp4 = fp4fuse::format::nvfp4<>;
using mxfp4 = fp4fuse::format::mxfp4<>;
using split = fp4fuse::gate_up::split_gate_first;
using separate = fp4fuse::gate_up::separate;

enum class sink { direct, staged, hand_back };

/// The matrix a source's oracle reads: interleaved<G> as itself, separate accumulators as the
/// gate half and the up half of a split_gate_first matrix.
template <class Source>
using oracle_layout = std::conditional_t<std::is_same_v<Source, separate>, split, Source>;

__device__ float load_or_zero(const float* m, std::int64_t rows, std::int64_t cols, std::int64_t row, std::int64_t col) {
  return row < rows && col < cols ? m[row * cols + col] : 0.0f;  // cols: the matrix's 2I
}

template <class Format, int N>
constexpr int blocks_of = N / 2 / Format::block_size;

/// One warpgroup per 128-row x N-column slice of the gate/up matrix ([rows, 2I] in the source's
/// oracle layout), its registers loaded as `tcgen05_32x32b_fragment<N>` says (N gate/up columns,
/// or N / 2 gate and N / 2 up columns for separate accumulators). The slices cover the scale
/// tensor's padded extent (and more: columns beyond it write nothing); every thread runs, so the
/// amax is warp-collective over converged warps.
template <class Source, class Intermediate, int N, sink Sink, class Format, class Activation>
__global__ void row_kernel(const float* gu, const float* bias, Activation act, const float* S,
                           fp4fuse::quantized_matrix<Format, layout_t> out, float* amax, fp4fuse::quantized_block<Format>* handed) {
  using frag = fp4fuse::tcgen05_32x32b_fragment<N>;
  constexpr int Blocks = blocks_of<Format, N>;
  constexpr int bytes = Blocks * Format::block_size / 2;
  __shared__ alignas(16) std::uint8_t staging[128][bytes];
  const std::int64_t I = out.cols(), rows = out.rows();
  const std::int64_t slices_per_row = (out.layout.padded_cols() * Format::block_size * 2 + N - 1) / N;
  const std::int64_t slice = blockIdx.x;
  const std::int64_t row0 = (slice / slices_per_row) * 128, col0 = (slice % slices_per_row) * N;  // gate/up column
  const int t = frag::thread_row();
  const std::int64_t row = row0 + frag::row(t, 0);
  const auto codec = fp4fuse::make_block_codec<Format>(S != nullptr ? *S : 1.0f);
  const fp4fuse::tile_origin origin{row, col0};
  // The description for this case: the sink kind, the bias (bias == nullptr: none), the amax.
  const auto run = [&](const auto& bias_value, const auto& input) {
    using B = std::decay_t<decltype(bias_value)>;
    using none = fp4fuse::output_amax::none;
    using global = fp4fuse::output_amax::global;
    using direct = fp4fuse::sink::direct<Format, layout_t>;
    using staged = fp4fuse::sink::staged<Format, layout_t>;
    if constexpr (Sink == sink::hand_back) {
      const fp4fuse::fused_epilogue<Format, fp4fuse::sink::hand_back, Activation, Source, B, none, Intermediate> op{codec, {}, act, {}, bias_value};
      const auto q = input(op);
      // The caller's own store: every block of the slice into a plain [padded rows][slices * Blocks] array.
      for (int b = 0; b < Blocks; ++b) handed[row * slices_per_row * Blocks + (slice % slices_per_row) * Blocks + b] = q.blocks[b];
      const std::int64_t left = out.layout.scale_cols - col0 / (2 * Format::block_size);
      fp4fuse::combine_output_amax(amax, q.amax(left <= 0 ? 0 : (left < Blocks ? static_cast<int>(left) : Blocks)), row < rows);
    } else if constexpr (Sink == sink::staged) {
      input(fp4fuse::fused_epilogue<Format, staged, Activation, Source, B, global, Intermediate>{codec, {out, staging[t]}, act, {}, bias_value, {amax}});
      fp4fuse::wait_staged_stores();
    } else {
      input(fp4fuse::fused_epilogue<Format, direct, Activation, Source, B, global, Intermediate>{codec, {out}, act, {}, bias_value, {amax}});
    }
  };
  const auto with_bias = [&](const auto& input) {
    if (bias != nullptr) {
      run(fp4fuse::column_bias{bias, 2 * I}, input);
    } else {
      run(fp4fuse::no_bias{}, input);
    }
  };
  if constexpr (std::is_same_v<Source, separate>) {
    float g[N / 2], u[N / 2];
    const std::int64_t c0 = col0 / 2;  // the segment's first output column
    for (int r = 0; r < N / 2; ++r) {
      const std::int64_t c = c0 + frag::col(t, r);
      g[r] = c < I ? load_or_zero(gu, rows, 2 * I, row, c) : 0.0f;
      u[r] = c < I ? load_or_zero(gu, rows, 2 * I, row, I + c) : 0.0f;
    }
    with_bias([&](const auto& op) { return fp4fuse::row_epilogue(op, g, u, origin); });
  } else {
    float acc[N];
    for (int r = 0; r < N; ++r) acc[r] = load_or_zero(gu, rows, 2 * I, row, col0 + frag::col(t, r));
    with_bias([&](const auto& op) { return fp4fuse::row_epilogue(op, acc, origin); });
  }
}

/// Counts differing bytes and reports the first few.
std::size_t differences(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, const char* what) {
  if (got.size() != want.size()) return got.size() + want.size();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad < 5) UNSCOPED_INFO(what << " byte " << i << ": got 0x" << std::hex << int(got[i]) << " want 0x" << int(want[i]) << std::dec);
    ++bad;
  }
  return bad;
}

/// One case: a random [rows, 2I] gate/up matrix (make_matrix: wide, zero, special, tie and
/// outlier rows) in the source's oracle layout, an optional random [2I] bias, quantized by
/// swiglu_quantize (on the biased matrix, added on the host in fp32 as the epilogue adds it) and by
/// the row kernel, into poisoned outputs; the packed bytes (rows padded with a poisoned gap) and the
/// whole scale tensor must be identical, the guards intact; the amax equal to the maximum of
/// |act(gate) * up| (NaN ignored) of the device's own `swiglu` output; the hand-back blocks equal
/// to the host block_codec on those activations.
template <class Source, class Intermediate, int N, sink Sink, class Format, class Activation>
void check(std::int64_t rows, std::int64_t I, const Activation& act, bool with_bias, const char* salt, bool finite = false) {
  using oracle = oracle_layout<Source>;
  constexpr int Blocks = blocks_of<Format, N>;
  constexpr int bs = Format::block_size;
  auto g = rng(salt);
  std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  if (finite) {
    // Without NaN and Inf inputs the amax is a finite maximum over every row (with them it is +Inf
    // as soon as a special row exists): the reduction across lanes and CTAs is then what is checked.
    replace_nonfinite(gu, g, 3.0f);
  }
  const column_bias_case bias_case = make_column_bias(gu, rows, 2 * I, g, with_bias);
  const std::vector<float>& bias = bias_case.bias;
  const std::vector<float>& biased = bias_case.biased;
  const layout_t layout{rows, I / bs};
  const std::int64_t ld_packed = (I / 2 + 15) / 16 * 16 + 16;
  INFO(salt << " M=" << rows << " I=" << I << " N=" << N << " bias=" << with_bias << " sink=" << int(Sink) << " block=" << bs);
  const auto packed_bytes = static_cast<std::size_t>(rows * ld_packed);
  const auto scale_bytes = static_cast<std::size_t>(layout.size_bytes());
  device_buffer d_gu(gu.size() * 4), d_biased(gu.size() * 4), d_bias(bias.size() * 4), d_S(4), d_h(static_cast<std::size_t>(rows * I) * 4),
      want_p(packed_bytes), got_p(packed_bytes), want_s(scale_bytes), got_s(scale_bytes), d_amax(4);
  d_gu.upload(gu.data(), gu.size() * 4);
  d_biased.upload(biased.data(), biased.size() * 4);
  d_bias.upload(bias.data(), bias.size() * 4);
  // The device's own activations (of the biased values): the oracle of S, the amax and the hand-back.
  REQUIRE(static_cast<bool>(fp4fuse::gated_activation<oracle>(fp4fuse::matrix_view<const float>{d_biased.as<float>(), rows, 2 * I, 2 * I}, fp4fuse::matrix_view<float>{d_h.as<float>(), rows, I, I},
                                                    fp4fuse::global_scale::none{}, act)));
  FP4FUSE_TEST_LAUNCHED();
  std::vector<float> h(static_cast<std::size_t>(rows * I));
  {
    const auto raw = d_h.download();
    std::memcpy(h.data(), raw.data(), raw.size());
  }
  if constexpr (std::is_same_v<Intermediate, fp4fuse::intermediate::bf16>) {
    for (auto& v : h) v = __bfloat162float(__float2bfloat16_rn(v));
  }
  float hmax = 0.0f;
  for (float v : h)
    if (!std::isnan(v)) hmax = std::max(hmax, std::fabs(v));
  const float S = fp4fuse::nvfp4_global_encode_scale(std::isfinite(hmax) ? hmax : 448.0f * 6.0f);
  d_S.upload(&S, 4);
  const float zero = 0.0f;
  d_amax.upload(&zero, 4);
  const float* S_arg = fp4fuse::detail::is_nvfp4<Format> ? d_S.as<float>() : nullptr;
  using output_t = fp4fuse::quantized_matrix<Format, layout_t>;
  REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<oracle, Intermediate>(
      fp4fuse::matrix_view<const float>{d_biased.as<float>(), rows, 2 * I, 2 * I}, output_t{want_p.as<std::uint8_t>(), ld_packed, want_s.as<std::uint8_t>(), layout},
      tensor_scale<Format>(S_arg), act)));
  FP4FUSE_TEST_LAUNCHED();
  const std::int64_t slices_per_row = (layout.padded_cols() * bs * 2 + N - 1) / N;
  const std::int64_t slices = layout.padded_rows() / 128 * slices_per_row;
  const std::size_t handed_count = static_cast<std::size_t>(layout.padded_rows() * slices_per_row * Blocks);
  device_buffer d_handed(handed_count * sizeof(fp4fuse::quantized_block<Format>));
  row_kernel<Source, Intermediate, N, Sink><<<static_cast<unsigned>(slices), 128>>>(
      d_gu.as<float>(), with_bias ? d_bias.as<float>() : nullptr, act, S_arg,
      output_t{got_p.as<std::uint8_t>(), ld_packed, got_s.as<std::uint8_t>(), layout}, d_amax.as<float>(),
      d_handed.as<fp4fuse::quantized_block<Format>>());
  FP4FUSE_TEST_LAUNCHED();
  float got_amax;
  {
    const auto raw = d_amax.download();
    std::memcpy(&got_amax, raw.data(), 4);
  }
  CHECK(bits_of(got_amax) == bits_of(hmax));
  if (finite) REQUIRE(std::isfinite(hmax));
  if constexpr (Sink == sink::hand_back) {
    std::vector<fp4fuse::quantized_block<Format>> handed(handed_count);
    const auto raw = d_handed.download();
    std::memcpy(handed.data(), raw.data(), raw.size());
    const auto codec = fp4fuse::make_block_codec<Format>(S);
    std::size_t bad = 0, blocks = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < I / bs; ++k) {
        float x[bs];
        std::memcpy(x, &h[static_cast<std::size_t>(r * I + k * bs)], sizeof x);
        const auto want = codec.quantize(x);
        const auto& got = handed[static_cast<std::size_t>(r * slices_per_row * Blocks + k)];
        ++blocks;
        if (std::memcmp(want.packed, got.packed, sizeof want.packed) != 0 || want.scale != got.scale) {
          if (bad < 5) UNSCOPED_INFO("hand-back block row " << r << " block " << k << ": scale 0x" << std::hex << int(got.scale) << " want 0x" << int(want.scale) << std::dec);
          ++bad;
        }
      }
    CHECK(blocks == static_cast<std::size_t>(rows * (I / bs)));
    CHECK(bad == 0);
  } else {
    const std::vector<unsigned char> want_scales = want_s.download();
    std::size_t padding_not_zero = 0;
    for (std::int64_t r = 0; r < layout.padded_rows(); ++r)
      for (std::int64_t k = 0; k < layout.padded_cols(); ++k)
        if (layout.is_padding(r, k) && want_scales[static_cast<std::size_t>(layout.offset(r, k))] != 0) ++padding_not_zero;
    REQUIRE(padding_not_zero == 0);
    CHECK(differences(got_p.download(), want_p.download(), "packed") == 0);
    CHECK(differences(got_s.download(), want_scales, "scales") == 0);
    CHECK(got_p.guard_intact());
    CHECK(got_s.guard_intact());
  }
}

}  // namespace


TEST_CASE("row epilogue [gpu]: NVFP4, tcgen05 32x32b registers, interleaved by 8, bit-identical to swiglu_quantize", "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using il8 = fp4fuse::gate_up::interleaved<8>;
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {16, 48, 80, 1040}) {
      check<il8, fp32, 32, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "row 1 block");
      check<il8, fp32, 64, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, true, "row 2 blocks bias");
      check<il8, bf16, 128, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu_clamped{}, false, "row 4 blocks bf16");
      check<il8, fp32, 64, sink::staged, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "row staged");
      check<il8, fp32, 128, sink::staged, nvfp4>(rows, I, fp4fuse::activation::geglu_tanh{}, true, "row staged bias");
      check<il8, fp32, 64, sink::hand_back, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, true, "row hand-back");
    }
  }
}

TEST_CASE("row epilogue [gpu]: MXFP4, other interleaves, separate accumulators", "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using il1 = fp4fuse::gate_up::interleaved<1>;
  using il8 = fp4fuse::gate_up::interleaved<8>;
  using il16 = fp4fuse::gate_up::interleaved<16>;
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {32, 96, 1056}) {
      check<il8, fp32, 64, sink::direct, mxfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "mx row");
      check<il8, fp32, 128, sink::direct, mxfp4>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "mx row bias");
      check<il1, bf16, 64, sink::staged, mxfp4>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "mx row il1 staged");
      check<il16, fp32, 64, sink::hand_back, mxfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "mx hand-back il16");
      check<il1, fp32, 32, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "nv il1 bias");
      check<il16, fp32, 64, sink::staged, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "nv il16 staged");
      check<separate, fp32, 32, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, true, "nv separate bias");
      check<separate, bf16, 64, sink::staged, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "nv separate staged");
      check<separate, fp32, 64, sink::direct, mxfp4>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "mx separate bias");
      check<separate, fp32, 128, sink::hand_back, mxfp4>(rows, I, fp4fuse::activation::swiglu{}, false, "mx separate hand-back");
    }
  }
}

TEST_CASE("row epilogue [gpu]: the output amax over finite data equals the exact maximum", "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using il8 = fp4fuse::gate_up::interleaved<8>;
  for (std::int64_t rows : {37, 130, 300}) {
    for (std::int64_t I : {32, 96, 1056}) {
      check<il8, fp32, 64, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, true, "amax direct", true);
      check<il8, bf16, 128, sink::staged, nvfp4>(rows, I, fp4fuse::activation::swiglu_clamped{}, false, "amax staged bf16", true);
      check<il8, fp32, 64, sink::hand_back, mxfp4>(rows, I, fp4fuse::activation::geglu_tanh{}, true, "amax hand-back mx", true);
      check<separate, fp32, 32, sink::direct, nvfp4>(rows, I, fp4fuse::activation::swiglu{}, true, "amax separate", true);
    }
  }
}

TEST_CASE("row_epilogue on the host: the hand-back sink equals block_codec on the biased activations", "[epilogue]") {
  // The row form is its own host twin: on the host, with a bias that skips columns past `count`
  // (a -0 there stays -0, so its E2M1 nibble keeps the sign), it equals block_codec on the activations.
  auto g = rng("row host");
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  float acc[64], bias[128] = {};  // the segment at gate/up column 64: bias[64 + i]
  for (int trial = 0; trial < 200; ++trial) {
    for (int i = 0; i < 64; ++i) {
      acc[i] = (g() % 8 == 0) ? -0.0f : u(g);
      bias[64 + i] = u(g);
    }
    const int count = static_cast<int>(g() % 65);
    const fp4fuse::block_codec<nvfp4> codec(fp4fuse::nvfp4_global_encode_scale(50.0f));
    const fp4fuse::fused_epilogue op{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{},
                                     fp4fuse::column_bias{bias, 64 + count}};
    const auto q = fp4fuse::row_epilogue(op, acc, {0, 64});
    float h[32];
    for (int j = 0; j < 32; ++j) {
      const int gc = 16 * (j / 8) + j % 8, uc = gc + 8;
      h[j] = fp4fuse::activation::swiglu{}.apply(gc < count ? acc[gc] + bias[64 + gc] : acc[gc], uc < count ? acc[uc] + bias[64 + uc] : acc[uc]);
    }
    for (int b = 0; b < 2; ++b) {
      float x[16];
      std::memcpy(x, &h[16 * b], sizeof x);
      const auto want = codec.quantize(x);
      REQUIRE(want.scale == q.blocks[b].scale);
      REQUIRE(want.packed[0] == q.blocks[b].packed[0]);
      REQUIRE(want.packed[1] == q.blocks[b].packed[1]);
    }
  }
}
