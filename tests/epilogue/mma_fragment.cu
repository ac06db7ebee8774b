// The mma.sync m16n8 f32 accumulator fragment map (epilogue/mma_fragment.cuh) against the PTX
// ISA's table: every element of the 16 x 8 tile held exactly once.
#include <fp4fuse/epilogue/mma_fragment.cuh>

#include "../test_support.hpp"

using frag = fp4fuse::mma_m16n8_f32_fragment;

static_assert(frag::row(0, 0) == 0 && frag::col(0, 0) == 0 && frag::col(0, 1) == 1, "T0 c0, c1");
static_assert(frag::row(5, 2) == 9 && frag::col(5, 3) == 3, "T5 c3 is row 9, col 3");
static_assert(frag::row(31, 3) == 15 && frag::col(31, 3) == 7, "T31 c3 is row 15, col 7");

TEST_CASE("mma_m16n8_f32_fragment: the 32 lanes x 4 registers cover the 16 x 8 tile exactly once", "[epilogue]") {
  int hits[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r) {
      ++hits[frag::row(lane, r)][frag::col(lane, r)];
    }
  }
  for (auto& row : hits) {
    for (int h : row) REQUIRE(h == 1);
  }
  // PTX ISA: c0/c1 of lane l are row l/4, columns 2(l%4) and 2(l%4)+1; c2/c3 the same 8 rows lower.
  for (int lane = 0; lane < 32; ++lane) {
    CHECK(frag::row(lane, 1) == lane / 4);
    CHECK(frag::row(lane, 3) == lane / 4 + 8);
    CHECK(frag::col(lane, 2) == 2 * (lane % 4));
  }
}
