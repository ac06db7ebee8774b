#pragma once
// Adversarial and random blocks for the block-quantization tests.
#include <cmath>
#include <limits>
#include <random>

#include "test_support.hpp"

namespace fp4fuse_test {

enum class block_kind {
  random_wide,     // each element's exponent drawn from a per-block window anywhere in float range
  random_normal,   // gaussian-ish around a per-block magnitude
  all_zero,        // +0 and -0 mixed
  underflow,       // far below what the global scale can represent
  one_huge,        // one element dominates by 2^20..2^40
  with_nan,        // a NaN among normal values
  with_inf,        // an Inf among normal values
  all_nan,
  ties,            // elements placed exactly on E2M1 rounding boundaries after scaling by 6/amax
  subnormal,       // float subnormals
  mixed_specials,  // NaNs (both signs, several payloads), +-Inf, huge, tiny and zero together
  count
};

inline const char* block_kind_name(block_kind k) {
  static const char* names[] = {"random_wide", "random_normal", "all_zero", "underflow", "one_huge",
                                "with_nan",    "with_inf",      "all_nan",  "ties",      "subnormal", "mixed_specials"};
  return names[static_cast<int>(k)];
}

template <int N>
void fill_block(block_kind kind, std::mt19937_64& g, float (&x)[N]) {
  std::uniform_int_distribution<int> pick(0, N - 1);
  switch (kind) {
    case block_kind::random_wide: {
      const int lo = std::uniform_int_distribution<int>(-140, 120)(g);
      for (float& v : x) v = random_magnitude(g, lo, lo + 6);
      break;
    }
    case block_kind::random_normal: {
      std::normal_distribution<float> d(0.0f, std::ldexp(1.0f, std::uniform_int_distribution<int>(-20, 20)(g)));
      for (float& v : x) v = d(g);
      break;
    }
    case block_kind::all_zero:
      for (float& v : x) v = (g() & 1) ? -0.0f : 0.0f;
      break;
    case block_kind::underflow:
      for (float& v : x) v = random_magnitude(g, -60, -40);
      break;
    case block_kind::one_huge:
      for (float& v : x) v = random_magnitude(g, -2, 2);
      x[pick(g)] = random_magnitude(g, 20, 40);
      break;
    case block_kind::with_nan:
      for (float& v : x) v = random_magnitude(g, -3, 3);
      x[pick(g)] = (g() & 1) ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::quiet_NaN();
      break;
    case block_kind::with_inf:
      for (float& v : x) v = random_magnitude(g, -3, 3);
      x[pick(g)] = (g() & 1) ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
      break;
    case block_kind::all_nan:
      for (float& v : x) v = std::numeric_limits<float>::quiet_NaN();
      break;
    case block_kind::ties: {
      static const float boundary[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
      const float unit = std::ldexp(1.0f, std::uniform_int_distribution<int>(-10, 10)(g));
      for (float& v : x) v = boundary[g() % 8] * unit * ((g() & 1) ? -1.0f : 1.0f);
      x[0] = 6.0f * unit;  // fixes amax so the others land on boundaries
      break;
    }
    case block_kind::subnormal:
      for (float& v : x) v = float_of(static_cast<std::uint32_t>(g() & 0x807FFFFFu));
      break;
    case block_kind::mixed_specials: {
      static const std::uint32_t specials[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFA5A5A5u, 0x7F800000u,
                                               0xFF800000u, 0x7F7FFFFFu, 0x80000001u, 0x00000000u, 0x80000000u};
      for (float& v : x) v = (g() & 1) ? float_of(specials[g() % 10]) : random_magnitude(g, -150, 128);
      break;
    }
    default:
      break;
  }
}

/// Global encode scales to test with: from a range of tensor amaxes, plus 1 and extremes.
inline std::vector<float> test_global_scales(std::mt19937_64& g) {
  std::vector<float> s = {1.0f, 448.0f * 6.0f, 1e-30f, 1e30f, 3.0e38f};
  for (int i = 0; i < 20; ++i) {
    s.push_back(2688.0f / std::fabs(random_magnitude(g, -30, 30)));
  }
  return s;
}

}  // namespace fp4fuse_test
