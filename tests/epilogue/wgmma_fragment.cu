// The wgmma m64nNk16 f32 fragment map: a bijection onto the 64 x N tile, the PTX ISA formula
// written out independently, and four mma.sync m16n8 fragments side by side per warp.
#include <fp4fuse/epilogue/mma_fragment.cuh>
#include <fp4fuse/epilogue/wgmma_fragment.cuh>

#include <vector>

#include "../test_support.hpp"

template <int N>
using wfrag = fp4fuse::wgmma_m64nN_f32_fragment<N>;
using mfrag = fp4fuse::mma_m16n8_f32_fragment;

static_assert(wfrag<256>::registers == 128 && wfrag<256>::rows == 64 && wfrag<256>::cols == 256, "m64n256: 128 registers");
static_assert(wfrag<8>::registers == 4, "m64n8: 4 registers, one m16n8 tile per warp");
static_assert(wfrag<256>::row(0, 0) == 0 && wfrag<256>::col(0, 0) == 0 && wfrag<256>::col(0, 1) == 1, "T0 d0, d1");
static_assert(wfrag<256>::row(37, 6) == 16 + 1 + 8 && wfrag<256>::col(37, 6) == 8 + 2, "T37 d6: warp 1, lane 5, tile 1, c2");
static_assert(wfrag<256>::row(127, 127) == 63 && wfrag<256>::col(127, 127) == 255, "T127 d127 is the last element");
static_assert(wfrag<64>::row(96, 2) == 48 + 8 && wfrag<64>::col(96, 5) == 8 + 1, "T96 is warp 3, lane 0");

namespace {

/// PTX ISA, "wgmma .m64nNk16 register fragment D" for f32 accumulators, written out here without
/// the library's helpers.
constexpr int ptx_row(int thread, int i) { return 16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i % 4) / 2); }
constexpr int ptx_col(int thread, int i) { return 8 * (i / 4) + 2 * ((thread % 32) % 4) + (i % 2); }

template <int N>
void check_fragment() {
  using f = wfrag<N>;
  INFO("N = " << N);
  REQUIRE(f::registers == N / 2);
  std::vector<int> hits(64 * N, 0);
  int out_of_tile = 0, formula = 0, not_mma = 0;
  for (int thread = 0; thread < 128; ++thread) {
    const int warp = thread / 32, lane = thread % 32;
    for (int i = 0; i < f::registers; ++i) {
      const int r = f::row(thread, i), c = f::col(thread, i);
      if (r < 0 || r >= 64 || c < 0 || c >= N) {
        ++out_of_tile;
        continue;
      }
      ++hits[r * N + c];
      if (r != ptx_row(thread, i) || c != ptx_col(thread, i)) ++formula;
      // Warp w's register i is register i % 4 of the mma.sync n8 tile i / 4, offset by 16 w rows.
      if (r != 16 * warp + mfrag::row(lane, i % 4) || c != 8 * (i / 4) + mfrag::col(lane, i % 4)) ++not_mma;
    }
  }
  CHECK(out_of_tile == 0);
  CHECK(formula == 0);
  CHECK(not_mma == 0);
  int not_once = 0;
  for (int h : hits) {
    if (h != 1) ++not_once;
  }
  CHECK(not_once == 0);
}

}  // namespace

TEST_CASE("wgmma_m64nN_f32_fragment: 128 threads x N/2 registers cover the 64 x N tile exactly once", "[epilogue]") {
  check_fragment<8>();
  check_fragment<64>();
  check_fragment<128>();
  check_fragment<256>();
}

TEST_CASE("wgmma_m64nN_f32_fragment::warp_tiles: register d[4n + r] is mma.sync tile n, register r", "[epilogue]") {
  float acc[wfrag<256>::registers];
  for (int i = 0; i < wfrag<256>::registers; ++i) acc[i] = static_cast<float>(i);
  const auto& tiles = wfrag<256>::warp_tiles(acc);
  static_assert(sizeof(tiles) == sizeof(acc), "32 tiles of 4 registers");
  int wrong = 0;
  for (int n = 0; n < 32; ++n)
    for (int r = 0; r < 4; ++r) wrong += tiles[n][r] != acc[4 * n + r] || &tiles[n][r] != &acc[4 * n + r];
  CHECK(wrong == 0);
}
