// detail/bits.cuh on the host, against the C++ standard library's classification and arithmetic:
// every one of the 2^32 float bit patterns through is_nan_bits, abs_float and rcp_approx_ftz (the
// host twin of rcp.approx.ftz: IEEE 1/x with subnormal inputs and results flushed to zero of the
// same sign), min_num / max_num (a NaN operand loses, quiet or signalling: std::fmin / std::fmax
// but for signalling NaNs) on special and random pairs, and the same functions in constant
// evaluation.
#include <fp4fuse/detail/bits.cuh>

#include <cmath>
#include <cstdint>
#include <limits>

#include "../test_support.hpp"

namespace {

using fp4fuse_test::bits_of;
using fp4fuse_test::float_of;
using fp4fuse_test::hex32;

constexpr float kMinNormal = std::numeric_limits<float>::min();  // 2^-126

/// The flush-to-zero reciprocal as the standard library states it: a NaN stays a NaN; zero and
/// subnormal inputs give the infinity of their sign; a result below 2^-126 in magnitude is zero
/// of its sign.
float rcp_ftz_oracle(float x) {
  if (std::isnan(x)) return x;
  if (std::fpclassify(x) == FP_ZERO || std::fpclassify(x) == FP_SUBNORMAL) return std::copysign(std::numeric_limits<float>::infinity(), x);
  const float r = 1.0f / x;
  return std::fabs(r) < kMinNormal ? std::copysign(0.0f, r) : r;
}

/// Bit equality, any NaN matching any NaN.
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

// Constant evaluation (the host path of the constexpr functions; the device pass uses fminf,
// fmaxf and fabsf outside constant evaluation).
constexpr float kNaN = fp4fuse::detail::bits_float(0x7FC00000u);
static_assert(fp4fuse::detail::is_nan_bits(0x7FC00000u) && fp4fuse::detail::is_nan_bits(0xFF800001u), "quiet and signalling NaNs, either sign");
static_assert(!fp4fuse::detail::is_nan_bits(0x7F800000u) && !fp4fuse::detail::is_nan_bits(0xFF800000u), "infinities are not NaN");
static_assert(fp4fuse::detail::min_num(kNaN, 2.0f) == 2.0f && fp4fuse::detail::min_num(2.0f, kNaN) == 2.0f, "a NaN operand loses");
static_assert(fp4fuse::detail::max_num(kNaN, -3.0f) == -3.0f && fp4fuse::detail::max_num(-3.0f, kNaN) == -3.0f, "a NaN operand loses");
static_assert(fp4fuse::detail::is_nan_bits(fp4fuse::detail::float_bits(fp4fuse::detail::max_num(kNaN, kNaN))), "two NaNs give a NaN");
static_assert(fp4fuse::detail::float_bits(fp4fuse::detail::abs_float(-0.0f)) == 0u, "abs clears the sign of -0");

}  // namespace

TEST_CASE("detail bits: is_nan_bits, abs_float and the host rcp_approx_ftz over all 2^32 floats", "[detail]") {
  std::uint64_t nan_mismatches = 0, abs_mismatches = 0, rcp_mismatches = 0, round_trip_mismatches = 0;
  std::uint32_t first_nan = 0, first_abs = 0, first_rcp = 0, first_round_trip = 0;
  std::uint64_t nans = 0;
  std::uint32_t u = 0;
  do {
    const float x = float_of(u);
    const bool nan = fp4fuse::detail::is_nan_bits(u);
    nans += nan;
    if (nan != std::isnan(x) && nan_mismatches++ == 0) first_nan = u;
    if (bits_of(fp4fuse::detail::abs_float(x)) != bits_of(std::fabs(x)) && abs_mismatches++ == 0) first_abs = u;
    if (!same(fp4fuse::detail::rcp_approx_ftz(x), rcp_ftz_oracle(x)) && rcp_mismatches++ == 0) first_rcp = u;
    if ((fp4fuse::detail::float_bits(x) != u || bits_of(fp4fuse::detail::bits_float(u)) != u) && round_trip_mismatches++ == 0) {
      first_round_trip = u;
    }
  } while (++u != 0);
  INFO("first mismatches: is_nan_bits " << hex32(first_nan) << ", abs_float " << hex32(first_abs) << ", rcp_approx_ftz " << hex32(first_rcp)
                                        << ", float_bits/bits_float " << hex32(first_round_trip));
  CHECK(nans == 2ull * ((1u << 23) - 1));  // every exponent-255 pattern but the two infinities
  CHECK(nan_mismatches == 0);
  CHECK(abs_mismatches == 0);
  CHECK(rcp_mismatches == 0);
  CHECK(round_trip_mismatches == 0);
}

TEST_CASE("detail bits: min_num and max_num: a NaN operand loses (std::fmin, std::fmax; a signalling NaN too)", "[detail]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f,      -0.0f, 1.0f, -1.0f, kMinNormal, -kMinNormal, float_of(1u), float_of(0x80000001u), inf, -inf,
                           float_of(0x7FC00000u), float_of(0xFFC00001u), float_of(0x7F800001u), 6.0f, -448.0f};
  auto g = fp4fuse_test::rng("detail bits min/max");
  std::vector<float> values(std::begin(special), std::end(special));
  for (int i = 0; i < 2000; ++i) values.push_back(fp4fuse_test::random_magnitude(g, -140, 128));
  std::uint64_t pairs = 0;
  for (const float a : values) {
    for (const float b : values) {
      if (std::fpclassify(a) == FP_ZERO && std::fpclassify(b) == FP_ZERO) {
        // Zeros of opposite sign compare equal; minNum / maxNum may return either.
        CHECK(fp4fuse::detail::min_num(a, b) == 0.0f);
        CHECK(fp4fuse::detail::max_num(a, b) == 0.0f);
        continue;
      }
      ++pairs;
      // A signalling NaN loses too, as it does in PTX min / max and IEEE 754-2019's minimumNumber
      // (glibc's fmin returns a NaN for it, as IEEE 754-2008's minNum did).
      const float want_min = std::isnan(a) && !std::isnan(b) ? b : std::isnan(b) && !std::isnan(a) ? a : std::fmin(a, b);
      const float want_max = std::isnan(a) && !std::isnan(b) ? b : std::isnan(b) && !std::isnan(a) ? a : std::fmax(a, b);
      if (!same(fp4fuse::detail::min_num(a, b), want_min) || !same(fp4fuse::detail::max_num(a, b), want_max)) {
        FAIL_CHECK("min_num / max_num(" << hex32(bits_of(a)) << ", " << hex32(bits_of(b)) << ") differ from std::fmin / std::fmax");
      }
    }
  }
  CHECK(pairs > 4000000);
}
