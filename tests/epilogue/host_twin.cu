// The host twins of the fused epilogues (epilogue/host_twin.cuh) on the CPU, as a kernel author's
// integration test would run them: every lane's registers filled from a random [rows, 2I] gate/up
// matrix through the form's fragment map, over tiles covering the scale tensor's padded extent,
// into poisoned host buffers; the bytes must equal the host block_codec on the activations (scale
// padding 0x00, packed row gaps untouched), and the row form's amax the exact maximum.
#include <fp4fuse/epilogue/host_twin.cuh>
#include <fp4fuse/epilogue/wgmma_swap_ab.cuh>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;

namespace {

using layout_t = fp4fuse::scale_layout::swizzled_128x4;

/// What every form must write: row-major packed [rows][ld_packed] (gaps poisoned) and the scale
/// tensor, from the host codec on act(gate) * up (rounded to bf16 first for intermediate::bf16).
template <class Format, class GateUp, class Intermediate, class Activation>
void reference(const std::vector<float>& gu, std::int64_t rows, std::int64_t I, std::int64_t ld_packed, const Activation& act, float S,
               std::vector<std::uint8_t>& packed, std::vector<std::uint8_t>& scales, float& amax) {
  constexpr int bs = Format::block_size;
  const layout_t layout{rows, I / bs};
  packed.assign(static_cast<std::size_t>(rows * ld_packed), poison);
  scales.assign(static_cast<std::size_t>(layout.size_bytes()), 0);
  const auto codec = fp4fuse::make_block_codec<Format>(S);
  amax = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < I / bs; ++k) {
      float x[bs];
      for (int i = 0; i < bs; ++i) {
        const std::int64_t c = k * bs + i;
        x[i] = Intermediate::round(act.apply(gu[static_cast<std::size_t>(r * 2 * I + GateUp::gate_col(c, I))],
                                             gu[static_cast<std::size_t>(r * 2 * I + GateUp::up_col(c, I))]));
        if (!std::isnan(x[i])) amax = std::max(amax, std::fabs(x[i]));
      }
      const auto b = codec.quantize(x);
      std::memcpy(&packed[static_cast<std::size_t>(r * ld_packed + k * bs / 2)], b.packed, bs / 2);
      scales[static_cast<std::size_t>(layout.offset(r, k))] = b.scale;
    }
}

/// Registers past the matrix hold 1e4 (a GEMM's edge tile may leave anything there): its activation
/// (~1e8) beats every value inside, so a form that let it into a byte or the amax would fail.
float value_at(const std::vector<float>& gu, std::int64_t rows, std::int64_t I, std::int64_t row, std::int64_t col) {
  return row < rows && col < 2 * I ? gu[static_cast<std::size_t>(row * 2 * I + col)] : 1e4f;
}

template <class Format>
float scale_for_test(const std::vector<float>& gu) {
  float m = 0.0f;
  for (float v : gu)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  return fp4fuse::nvfp4_global_encode_scale(m * m);  // any finite S works: the twins must match at it
}

// mma_separate / wgmma_separate: gate and up in two accumulators (a GEMM with two B operands),
// each filled from its own columns, then interleave_gate_up (the bias applies to the interleaved accumulator).
// swap_ab: wgmma with W's 64 gate/up rows as M and Width tokens as N (epilogue/wgmma_swap_ab.cuh).
enum class form { mma, wgmma, row, mma_separate, wgmma_separate, swap_ab };

template <form Form, int Width, class Format, class Intermediate, class Activation>
void check(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt, bool with_bias = false) {
  using il8 = fp4fuse::gate_up::interleaved<8>;
  constexpr int bs = Format::block_size;
  auto g = rng(salt);
  const std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  const float S = scale_for_test<Format>(gu);
  const std::int64_t ld_packed = I / 2 + 16;
  // An optional [2I] bias: the reference quantizes the biased matrix (added in fp32), the twins
  // add it to the registers as the description's column_bias says (in the interleaved order; the
  // separate forms' accumulators are interleaved first).
  const column_bias_case bias_case = make_column_bias(gu, rows, 2 * I, g, with_bias);
  const std::vector<float>& bias = bias_case.bias;
  const std::vector<float>& biased = bias_case.biased;
  const auto gate_at = [&](std::int64_t row, std::int64_t c) { return c < I ? value_at(gu, rows, I, row, il8::gate_col(c, I)) : 1e4f; };
  const auto up_at = [&](std::int64_t row, std::int64_t c) { return c < I ? value_at(gu, rows, I, row, il8::up_col(c, I)) : 1e4f; };
  std::vector<std::uint8_t> want_p, want_s;
  float want_amax;
  reference<Format, il8, Intermediate>(biased, rows, I, ld_packed, act, S, want_p, want_s, want_amax);
  const layout_t layout{rows, I / bs};
  std::vector<std::uint8_t> got_p(want_p.size(), poison), got_s(want_s.size(), poison);
  const fp4fuse::quantized_matrix<Format, layout_t> out{got_p.data(), ld_packed, got_s.data(), layout};
  const auto codec = fp4fuse::make_block_codec<Format>(S);
  const std::int64_t gu_cols = layout.padded_cols() * bs * 2;  // gate/up columns of the padded extent
  float got_amax = 0.0f;
  // The description: the output and its sink, the bias if any, the amax into a host float.
  const auto run = [&](const auto& twin) {
    using direct = fp4fuse::sink::direct<Format, layout_t>;
    using global = fp4fuse::output_amax::global;
    if (with_bias) {
      twin(fp4fuse::fused_epilogue<Format, direct, Activation, il8, fp4fuse::column_bias, global, Intermediate>{
          codec, {out}, act, {}, {bias.data(), 2 * I}, {&got_amax}});
    } else {
      twin(fp4fuse::fused_epilogue<Format, direct, Activation, il8, fp4fuse::no_bias, global, Intermediate>{codec, {out}, act, {}, {}, {&got_amax}});
    }
  };
  INFO(salt << " M=" << rows << " I=" << I << " width=" << Width);
  if constexpr (Form == form::mma) {
    using frag = fp4fuse::mma_m16n8_f32_fragment;
    static float acc[32][Width][4];
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += 16)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += 8 * Width) {
        for (int lane = 0; lane < 32; ++lane)
          for (int n = 0; n < Width; ++n)
            for (int r = 0; r < 4; ++r) acc[lane][n][r] = value_at(gu, rows, I, r0 + frag::row(lane, r), c0 + 8 * n + frag::col(lane, r));
        run([&](const auto& op) { fp4fuse::mma_epilogue_host(op, acc, {r0, c0}); });
      }
  } else if constexpr (Form == form::wgmma) {
    using frag = fp4fuse::wgmma_m64nN_f32_fragment<Width>;
    static float acc[128][Width / 2];
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += 64)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += Width) {
        for (int t = 0; t < 128; ++t)
          for (int i = 0; i < Width / 2; ++i) acc[t][i] = value_at(gu, rows, I, r0 + frag::row(t, i), c0 + frag::col(t, i));
        run([&](const auto& op) { fp4fuse::wgmma_epilogue_host(op, acc, {r0, c0}); });
      }
  } else if constexpr (Form == form::mma_separate) {
    using frag = fp4fuse::mma_m16n8_f32_fragment;
    static float gate[32][Width / 2][4], up[32][Width / 2][4], acc[32][Width][4];
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += 16)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += 8 * Width) {
        const std::int64_t oc0 = c0 / 2;  // the accumulators' first output column
        for (int lane = 0; lane < 32; ++lane) {
          for (int n = 0; n < Width / 2; ++n)
            for (int r = 0; r < 4; ++r) {
              gate[lane][n][r] = gate_at(r0 + frag::row(lane, r), oc0 + 8 * n + frag::col(lane, r));
              up[lane][n][r] = up_at(r0 + frag::row(lane, r), oc0 + 8 * n + frag::col(lane, r));
            }
          fp4fuse::interleave_gate_up(gate[lane], up[lane], acc[lane]);
        }
        run([&](const auto& op) { fp4fuse::mma_epilogue_host(op, acc, {r0, 2 * oc0}); });
      }
  } else if constexpr (Form == form::wgmma_separate) {
    using half = fp4fuse::wgmma_m64nN_f32_fragment<Width / 2>;  // each accumulator: Width / 2 output columns
    static float gate[128][Width / 4], up[128][Width / 4], acc[128][Width / 2];
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += 64)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += Width) {
        const std::int64_t oc0 = c0 / 2;
        for (int t = 0; t < 128; ++t) {
          for (int i = 0; i < Width / 4; ++i) {
            gate[t][i] = gate_at(r0 + half::row(t, i), oc0 + half::col(t, i));
            up[t][i] = up_at(r0 + half::row(t, i), oc0 + half::col(t, i));
          }
          fp4fuse::interleave_gate_up(gate[t], up[t], acc[t]);
        }
        run([&](const auto& op) { fp4fuse::wgmma_epilogue_host(op, acc, {r0, 2 * oc0}); });
      }
  } else if constexpr (Form == form::swap_ab) {
    using frag = fp4fuse::wgmma_m64nN_f32_fragment<Width>;  // rows: 64 gate/up columns, columns: Width tokens
    static float acc[128][Width / 2];
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += Width)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += 64) {
        for (int t = 0; t < 128; ++t)
          for (int i = 0; i < Width / 2; ++i) acc[t][i] = value_at(gu, rows, I, r0 + frag::col(t, i), c0 + frag::row(t, i));
        run([&](const auto& op) { fp4fuse::wgmma_swap_ab_epilogue_host(op, acc, {r0, c0}); });
      }
  } else {
    using frag = fp4fuse::tcgen05_32x32b_fragment<Width>;
    static float acc[128][Width];
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += 128)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += Width) {
        for (int t = 0; t < 128; ++t)
          for (int i = 0; i < Width; ++i) acc[t][i] = value_at(gu, rows, I, r0 + frag::row(t, i), c0 + frag::col(t, i));
        run([&](const auto& op) { fp4fuse::row_epilogue_host(op, acc, {r0, c0}); });
      }
  }
  CHECK(bits_of(got_amax) == bits_of(want_amax));  // every form: the amax over the values inside the matrix
  std::size_t bad_p = 0, bad_s = 0;
  for (std::size_t i = 0; i < want_p.size(); ++i) bad_p += got_p[i] != want_p[i];
  for (std::size_t i = 0; i < want_s.size(); ++i) bad_s += got_s[i] != want_s[i];
  CHECK(bad_p == 0);
  CHECK(bad_s == 0);
}

}  // namespace

TEST_CASE("host twins: the mma.sync, wgmma, swap-AB wgmma and tcgen05-row forms write the host block_codec's bytes, padding included", "[epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using nv = fp4fuse::format::nvfp4<>;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {32, 96, 1056}) {
      check<form::mma, 8, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, "twin mma");
      check<form::mma, 4, nv, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin mma bf16");
      check<form::mma, 12, nv, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, "twin mma 3 blocks");
      check<form::wgmma, 256, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, "twin wgmma");
      check<form::wgmma, 64, nv, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin wgmma 64");
      check<form::mma, 8, mx, fp32>(rows, I, fp4fuse::activation::swiglu{}, "twin mma mx");
      check<form::mma, 8, nv, fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin mma bias", true);
      check<form::wgmma, 128, mx, fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin wgmma mx bias", true);
      check<form::row, 64, nv, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin row bias", true);
      check<form::mma, 24, mx, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin mma mx 3 blocks");
      check<form::wgmma, 256, mx, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, "twin wgmma mx");
      check<form::row, 32, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, "twin row");
      check<form::row, 128, nv, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin row bf16");
      check<form::row, 64, mx, fp32>(rows, I, fp4fuse::activation::swiglu{}, "twin row mx");
      check<form::row, 128, mx, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, "twin row mx 2 blocks");
      check<form::swap_ab, 64, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, "twin swap-AB");
      check<form::swap_ab, 8, nv, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin swap-AB 8 tokens", true);
      check<form::swap_ab, 136, nv, fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, "twin swap-AB 136 tokens bias", true);
      check<form::swap_ab, 256, mx, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, "twin swap-AB mx");
      check<form::swap_ab, 48, mx, bf16>(rows, I, fp4fuse::activation::swiglu{}, "twin swap-AB mx 48 tokens", true);
    }
  }
}

TEST_CASE("interleave_gate_up: separate gate and up accumulators through the mma.sync and wgmma forms (host twins)", "[epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using nv = fp4fuse::format::nvfp4<>;
  using mx = fp4fuse::format::mxfp4<>;
  // The map itself: gate tile k -> tile 2k, up tile k -> tile 2k + 1; wgmma register 4k + j -> 8k + j and 8k + 4 + j.
  float g2[3][4], u2[3][4], a2[6][4], g1[12], u1[12], a1[24];
  for (int i = 0; i < 12; ++i) g2[i / 4][i % 4] = g1[i] = static_cast<float>(i), u2[i / 4][i % 4] = u1[i] = static_cast<float>(100 + i);
  fp4fuse::interleave_gate_up(g2, u2, a2);
  fp4fuse::interleave_gate_up(g1, u1, a1);
  for (int i = 0; i < 24; ++i) {
    const float want = (i / 4) % 2 == 0 ? static_cast<float>(4 * (i / 8) + i % 4) : static_cast<float>(100 + 4 * (i / 8) + i % 4);
    REQUIRE(a1[i] == want);
    REQUIRE(a2[i / 4][i % 4] == want);
  }
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {32, 96, 1056}) {
      check<form::mma_separate, 8, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, "separate mma", true);
      check<form::mma_separate, 16, mx, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "separate mma mx");
      check<form::wgmma_separate, 256, nv, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, "separate wgmma", true);
      check<form::wgmma_separate, 128, mx, fp32>(rows, I, fp4fuse::activation::swiglu{}, "separate wgmma mx", true);
    }
  }
}
