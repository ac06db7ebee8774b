// intermediate.cuh on the host: fp32::round is the identity on every bit pattern; bf16::round is
// round-to-nearest-even to bfloat16 and back, checked over all 2^32 floats against the rounding
// written out on the bits (keep the top 16 bits, add half an ulp less one plus the kept lowest bit;
// every NaN becomes the canonical NaN 0x7FFF, sign dropped, which cvt.rn.bf16.f32 also gives on the
// device). The device path is the toolkit's __float2bfloat16_rn too, and the kernels' tests compare
// its bits with the host's (tests/kernels/swiglu_quantize.cu).
#include <fp4fuse/intermediate.cuh>

#include <cmath>
#include <cstdint>

#include "test_support.hpp"

namespace {

using fp4fuse_test::bits_of;
using fp4fuse_test::float_of;
using fp4fuse_test::hex32;

/// x rounded to bfloat16 (nearest, ties to even) and widened back, from its bits alone. Overflow
/// rounds to the infinity of its sign, as the carry into the exponent gives.
std::uint32_t bf16_round_bits(std::uint32_t u) {
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF0000u;  // NaN: the canonical bfloat16 NaN, widened
  const std::uint32_t lsb = (u >> 16) & 1u;
  return (u + 0x7FFFu + lsb) & 0xFFFF0000u;
}

}  // namespace

TEST_CASE("intermediate::bf16::round is round-to-nearest-even to bfloat16 on all 2^32 floats; fp32::round is the identity",
          "[intermediate]") {
  std::uint64_t bf16_mismatches = 0, fp32_mismatches = 0, changed = 0;
  std::uint32_t first_bf16 = 0, first_fp32 = 0;
  std::uint32_t u = 0;
  do {
    const float x = float_of(u);
    const float r = fp4fuse::intermediate::bf16::round(x);
    const std::uint32_t want = bf16_round_bits(u);
    if (bits_of(r) != want && bf16_mismatches++ == 0) first_bf16 = u;
    changed += bits_of(r) != u;
    if (bits_of(fp4fuse::intermediate::fp32::round(x)) != u && fp32_mismatches++ == 0) first_fp32 = u;
  } while (++u != 0);
  INFO("first mismatches: bf16 " << hex32(first_bf16) << ", fp32 " << hex32(first_fp32));
  CHECK(bf16_mismatches == 0);
  CHECK(fp32_mismatches == 0);
  CHECK(changed > (1ull << 31));  // most floats have low bits to round away: the rounding is not the identity
  // Named cases: a tie to even in each direction, the largest float to +Inf, a subnormal's tie.
  CHECK(fp4fuse::intermediate::bf16::round(1.00390625f) == 1.0f);            // 1 + 2^-8: halfway, 1.0 is even
  CHECK(fp4fuse::intermediate::bf16::round(1.01171875f) == 1.015625f);       // 1 + 3 * 2^-8: halfway, up to even
  CHECK(std::isinf(fp4fuse::intermediate::bf16::round(float_of(0x7F7FFFFFu))));
  CHECK(bits_of(fp4fuse::intermediate::bf16::round(float_of(0x00008000u))) == 0u);  // halfway between 0 and 0x00010000: to even 0
  CHECK(bits_of(fp4fuse::intermediate::bf16::round(float_of(0x80018000u))) == 0x80020000u);
  static_assert(fp4fuse::intermediate::fp32::round(1.00390625f) == 1.00390625f, "fp32::round is constexpr and keeps every bit");
}
