// epilogue/operation.cuh on the host: what the fused epilogue's description deduces and computes.
// - Class template argument deduction: each guide gives the documented parameters, the defaults
//   where members are left out.
// - activate(): the bias of each operand's own column is added to gate and to up before the
//   activation, and the intermediate rounding comes last; checked against the same steps written
//   out, on random values with a bias that differs in every column (a swapped column index, a bias
//   added once or after the activation, or a rounding before it would each differ).
// - column_bias::add beyond `count` and no_bias::add leave every bit of the value, -0 and NaN
//   payloads included; below `count` they add in fp32.
#include <fp4fuse/epilogue/operation.cuh>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

#include "../test_support.hpp"

namespace {

using fp4fuse_test::bits_of;
using fp4fuse_test::float_of;
using fp4fuse_test::hex32;

using nvfp4_t = fp4fuse::format::nvfp4<>;
using mxfp4_t = fp4fuse::format::mxfp4<>;
using swizzled = fp4fuse::scale_layout::swizzled_128x4;
using linear = fp4fuse::scale_layout::linear;

/// Bit equality, any NaN matching any NaN.
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

/// Round to bfloat16 (nearest even) on the bits, without the toolkit: the intermediate's oracle.
float bf16_rne(float v) {
  const std::uint32_t u = bits_of(v);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return float_of(0x7FFF0000u);
  return float_of((u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u);
}

template <class Op, class Activation, class Intermediate>
void check_activate(const Op& op, const Activation& act, const std::vector<float>& bias, Intermediate, const char* what) {
  auto g = fp4fuse_test::rng(what);
  const std::int64_t cols = static_cast<std::int64_t>(bias.size());
  int differs_from_unbiased = 0;
  for (int i = 0; i < 20000; ++i) {
    const float gate = fp4fuse_test::random_magnitude(g, -8, 4), up = fp4fuse_test::random_magnitude(g, -8, 4);
    const std::int64_t gate_col = static_cast<std::int64_t>(g() % cols), up_col = static_cast<std::int64_t>(g() % cols);
    float want = act.apply(gate + bias[gate_col], up + bias[up_col]);
    if constexpr (std::is_same_v<Intermediate, fp4fuse::intermediate::bf16>) want = bf16_rne(want);
    const float got = op.activate(gate, up, gate_col, up_col);
    if (!same(got, want)) {
      FAIL_CHECK(what << ": activate(" << gate << ", " << up << ", " << gate_col << ", " << up_col << ") = " << hex32(bits_of(got))
                      << ", written out " << hex32(bits_of(want)));
    }
    differs_from_unbiased += !same(got, act.apply(gate, up));
  }
  CHECK(differs_from_unbiased > 15000);  // the bias takes part
}

}  // namespace

TEST_CASE("fused_epilogue: deduction gives the documented parameters, the defaults where members are left out", "[epilogue]") {
  std::uint8_t packed_bytes[8] = {};
  const fp4fuse::quantized_matrix<nvfp4_t, swizzled> out{packed_bytes, 8, nullptr, {}};
  const fp4fuse::quantized_matrix<mxfp4_t, linear> out_mx{};
  const fp4fuse::block_codec<nvfp4_t> codec(1.0f);
  float amax = 0;
  const fp4fuse::fused_epilogue plain{codec, fp4fuse::sink::direct{out}};
  static_assert(std::is_same_v<decltype(plain),
                               const fp4fuse::fused_epilogue<nvfp4_t, fp4fuse::sink::direct<nvfp4_t, swizzled>, fp4fuse::activation::swiglu,
                                                             fp4fuse::gate_up::interleaved<8>, fp4fuse::no_bias, fp4fuse::output_amax::none,
                                                             fp4fuse::intermediate::fp32>>);
  const fp4fuse::fused_epilogue staged{fp4fuse::block_codec<mxfp4_t>(), fp4fuse::sink::staged{out_mx, nullptr}, fp4fuse::activation::geglu_tanh{}};
  static_assert(std::is_same_v<decltype(staged), const fp4fuse::fused_epilogue<mxfp4_t, fp4fuse::sink::staged<mxfp4_t, linear>, fp4fuse::activation::geglu_tanh>>);
  const fp4fuse::fused_epilogue row{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::separate{}};
  static_assert(std::is_same_v<typename decltype(row)::gate_up_type, fp4fuse::gate_up::separate>);
  const fp4fuse::fused_epilogue biased{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu_clamped{}, fp4fuse::gate_up::interleaved<8>{},
                                       fp4fuse::column_bias{nullptr, 0}};
  static_assert(std::is_same_v<typename decltype(biased)::bias_type, fp4fuse::column_bias>);
  const fp4fuse::fused_epilogue with_amax{codec, fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{},
                                          fp4fuse::no_bias{}, fp4fuse::output_amax::global{&amax}};
  static_assert(std::is_same_v<typename decltype(with_amax)::amax_type, fp4fuse::output_amax::global>);
  const fp4fuse::fused_epilogue rounded{codec, fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{},
                                        fp4fuse::no_bias{}, fp4fuse::output_amax::none{}, fp4fuse::intermediate::bf16{}};
  static_assert(std::is_same_v<typename decltype(rounded)::intermediate_type, fp4fuse::intermediate::bf16>);
  // The members keep the values given.
  CHECK(with_amax.amax.amax == &amax);
  const float bias_values[2] = {1.0f, 2.0f};
  const fp4fuse::fused_epilogue with_bias{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu_clamped{3.0f, 5.0f},
                                          fp4fuse::gate_up::interleaved<8>{}, fp4fuse::column_bias{bias_values, 2}};
  CHECK(with_bias.bias.data == bias_values);
  CHECK(with_bias.bias.count == 2);
  CHECK(with_bias.act.alpha == 3.0f);
  CHECK(with_bias.act.limit == 5.0f);
  int staging = 0;
  const fp4fuse::fused_epilogue staged_at{fp4fuse::block_codec<mxfp4_t>(), fp4fuse::sink::staged{out_mx, &staging}};
  CHECK(staged_at.sink.staging == &staging);
  CHECK(plain.sink.out.packed == out.packed);
}

TEST_CASE("fused_epilogue::activate: each column's bias on gate and up, then the activation, then the intermediate rounding",
          "[epilogue]") {
  auto g = fp4fuse_test::rng("operation bias");
  std::vector<float> bias(64);
  for (float& b : bias) b = fp4fuse_test::random_magnitude(g, -3, 2);
  const fp4fuse::column_bias cb{bias.data(), static_cast<std::int64_t>(bias.size())};
  const fp4fuse::block_codec<nvfp4_t> codec(1.0f);
  using il8 = fp4fuse::gate_up::interleaved<8>;
  const fp4fuse::activation::swiglu_clamped clamped{1.702f, 7.0f};
  check_activate(fp4fuse::fused_epilogue{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, il8{}, cb}, fp4fuse::activation::swiglu{},
                 bias, fp4fuse::intermediate::fp32{}, "swiglu, fp32");
  check_activate(fp4fuse::fused_epilogue{codec, fp4fuse::sink::hand_back{}, clamped, il8{}, cb}, clamped, bias, fp4fuse::intermediate::fp32{},
                 "swiglu_clamped, fp32");
  check_activate(fp4fuse::fused_epilogue{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::geglu_tanh{}, fp4fuse::gate_up::separate{}, cb,
                                         fp4fuse::output_amax::none{}, fp4fuse::intermediate::bf16{}},
                 fp4fuse::activation::geglu_tanh{}, bias, fp4fuse::intermediate::bf16{}, "geglu_tanh, bf16");
  // Without a bias: the activation alone (then the rounding).
  const fp4fuse::fused_epilogue none{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, il8{}, fp4fuse::no_bias{},
                                     fp4fuse::output_amax::none{}, fp4fuse::intermediate::bf16{}};
  for (int i = 0; i < 1000; ++i) {
    const float gate = fp4fuse_test::random_magnitude(g, -8, 4), up = fp4fuse_test::random_magnitude(g, -8, 4);
    CHECK(same(none.activate(gate, up, i, i + 8), bf16_rne(fp4fuse::activation::swiglu{}.apply(gate, up))));
  }
}

TEST_CASE("column_bias and no_bias: every bit kept where no bias applies, an fp32 sum where it does", "[epilogue]") {
  const float bias[4] = {0.5f, -1.0f, 0.0f, 3.0f};
  const fp4fuse::column_bias b{bias, 3};  // column 3 has a value in memory but lies beyond count
  for (const std::uint32_t u : {0x80000000u, 0x00000000u, 0x7FC01234u, 0xFF800001u, 0x3F800000u, 0x00000001u}) {
    const float v = float_of(u);
    INFO("value " << hex32(u));
    CHECK(bits_of(b.add(v, 3)) == u);
    CHECK(bits_of(b.add(v, 1000)) == u);
    CHECK(bits_of(fp4fuse::no_bias::add(v, 0)) == u);
    CHECK(bits_of(fp4fuse::column_bias{}.add(v, 0)) == u);  // count 0: no column has a bias
  }
  CHECK(b.add(1.0f, 0) == 1.5f);
  CHECK(b.add(1.0f, 1) == 0.0f);
  CHECK(bits_of(b.add(-0.0f, 2)) == 0u);  // -0 + +0 is +0 where a bias (+0) applies
  CHECK(b.add(float_of(0x3F800001u), 0) == float_of(0x3F800001u) + 0.5f);
  static_assert(fp4fuse::no_bias::add(-2.5f, 7) == -2.5f, "no_bias::add is constexpr");
}
