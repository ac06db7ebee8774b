// The tcgen05.ld 32x32b fragment map (epilogue/tcgen05_fragment.cuh): thread t holds row t,
// register r column r, every element of the 128 x N slice exactly once.
#include <fp4fuse/epilogue/tcgen05_fragment.cuh>

#include "../test_support.hpp"

static_assert(fp4fuse::tcgen05_32x32b_fragment<32>::row(77, 3) == 77 && fp4fuse::tcgen05_32x32b_fragment<32>::col(77, 3) == 3,
              "32x32b: thread t holds row t, register r column r");

TEST_CASE("tcgen05_32x32b_fragment: thread t holds row t, register r column r", "[epilogue]") {
  using frag = fp4fuse::tcgen05_32x32b_fragment<64>;
  static_assert(frag::registers == 64 && frag::rows == 128 && frag::cols == 64, "one x64 load: 64 registers of one row per thread");
  int hits[128][64] = {};
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < frag::registers; ++r) ++hits[frag::row(t, r)][frag::col(t, r)];
  for (auto& row : hits)
    for (int h : row) REQUIRE(h == 1);
}
