// Scale-factor layouts: bijection onto the padded allocation, the reference formula, padding.
#include <fp4fuse/scale_layout.cuh>

#include <vector>

#include "test_support.hpp"

using scale_layout_linear = fp4fuse::scale_layout::linear;
using scale_layout_swizzled_128x4 = fp4fuse::scale_layout::swizzled_128x4;

static_assert(scale_layout_swizzled_128x4{1, 1}.size_bytes() == 512, "one tile minimum");
static_assert(scale_layout_swizzled_128x4{129, 5}.size_bytes() == 256 * 8, "padding to 128 x 4");

TEST_CASE("swizzled 128x4: offsets of hand-picked positions", "[scale_layout]") {
  const scale_layout_swizzled_128x4 l{300, 7};  // M' = 384, K' = 8
  CHECK(l.padded_rows() == 384);
  CHECK(l.padded_cols() == 8);
  CHECK(l.offset(0, 0) == 0);
  CHECK(l.offset(0, 3) == 3);
  CHECK(l.offset(1, 0) == 16);
  CHECK(l.offset(32, 0) == 4);
  CHECK(l.offset(33, 2) == 16 + 4 + 2);
  CHECK(l.offset(127, 3) == 31 * 16 + 3 * 4 + 3);
  CHECK(l.offset(0, 4) == 512);
  CHECK(l.offset(128, 0) == 2 * 512);
  CHECK(l.offset(299, 6) == 2 * 1024 + 512 + (299 % 32) * 16 + ((299 % 128) / 32) * 4 + 2);
}

TEST_CASE("swizzled 128x4: a bijection onto [0, M' * K') for many shapes; padding enumerated", "[scale_layout]") {
  for (std::int64_t M : {1, 2, 31, 32, 33, 127, 128, 129, 255, 256, 300, 1000}) {
    for (std::int64_t kb : {1, 2, 3, 4, 5, 8, 9, 448}) {
      const scale_layout_swizzled_128x4 l{M, kb};
      std::vector<int> hits(static_cast<std::size_t>(l.size_bytes()), 0);
      std::int64_t padding = 0;
      for (std::int64_t m = 0; m < l.padded_rows(); ++m) {
        for (std::int64_t k = 0; k < l.padded_cols(); ++k) {
          const std::int64_t o = l.offset(m, k);
          REQUIRE(o >= 0);
          REQUIRE(o < l.size_bytes());
          // The reference doc's formula, written out independently.
          REQUIRE(o == (m / 128) * (l.padded_cols() / 4) * 512 + (k / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + (k % 4));
          ++hits[static_cast<std::size_t>(o)];
          padding += l.is_padding(m, k);
          REQUIRE(l.is_padding(m, k) == (m >= M || k >= kb));
        }
      }
      for (int h : hits) REQUIRE(h == 1);
      REQUIRE(padding == l.size_bytes() - M * kb);
    }
  }
}

TEST_CASE("linear: row-major, no padding", "[scale_layout]") {
  const scale_layout_linear l{5, 7};
  CHECK(l.size_bytes() == 35);
  CHECK(l.offset(2, 3) == 17);
  CHECK_FALSE(l.is_padding(4, 6));
}
