// Scale-factor layouts: bijection onto the padded allocation, the reference formula, padding.
#include <fp4fuse/scale_layout.cuh>

#include <random>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

namespace scale_layout = fp4fuse::scale_layout;

static_assert(scale_layout::swizzled_128x4{1, 1}.size_bytes() == 512, "one tile minimum");
static_assert(scale_layout::swizzled_128x4{129, 5}.size_bytes() == 256 * 8, "padding to 128 x 4");
static_assert(!scale_layout::is_grouped<scale_layout::linear> && !scale_layout::is_grouped<scale_layout::swizzled_128x4> &&
                  scale_layout::is_grouped<scale_layout::grouped_swizzled_128x4<scale_layout::expert_start::offset_bound>> &&
                  scale_layout::is_grouped<scale_layout::grouped_swizzled_128x4<scale_layout::expert_start::padded_prefix_sum>>,
              "the dense entry points refuse exactly the grouped layouts");

TEST_CASE("swizzled 128x4: offsets of hand-picked positions", "[scale_layout]") {
  const scale_layout::swizzled_128x4 l{300, 7};  // M' = 384, K' = 8
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
      const scale_layout::swizzled_128x4 l{M, kb};
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
  const scale_layout::linear l{5, 7};
  CHECK(l.size_bytes() == 35);
  CHECK(l.offset(2, 3) == 17);
  CHECK_FALSE(l.is_padding(4, 6));
}

namespace {

template <class Start>
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<Start>;
using fp4fuse::scale_layout::expert_start::offset_bound;
using fp4fuse::scale_layout::expert_start::padded_prefix_sum;

/// Routing counts with the edge cases every grouped kernel meets: empty experts, 1, 127, 128,
/// 129 rows, and a random rest.
std::vector<std::int32_t> routing_offsets(std::mt19937_64& g, int experts) {
  const std::int32_t edge[] = {0, 1, 127, 128, 129, 0, 0, 255, 256, 3};
  std::vector<std::int32_t> offsets{0};
  for (int e = 0; e < experts; ++e) {
    const std::int32_t c = e < 10 ? edge[e] : static_cast<std::int32_t>(g() % 300);
    offsets.push_back(offsets.back() + c);
  }
  return offsets;
}

/// The two peers' start rows, written from their descriptions: vLLM's blockscale_offsets (prefix
/// sums of round_up(count, 128)) and TensorRT-LLM's round_up(offset_e + e * 127, 128).
template <class Start>
std::int64_t reference_start(const std::vector<std::int32_t>& off, int e) {
  if constexpr (std::is_same_v<Start, padded_prefix_sum>) {
    std::int64_t s = 0;
    for (int i = 0; i < e; ++i) s += (off[i + 1] - off[i] + 127) / 128 * 128;
    return s;
  } else {
    return (off[e] + 127 * static_cast<std::int64_t>(e) + 127) / 128 * 128;
  }
}

template <class Start>
void check_grouped(const char* salt) {
  auto g = fp4fuse_test::rng(salt);
  for (int experts : {1, 2, 10, 33, 256}) {
    for (std::int64_t kb : {1, 3, 4, 9, 128}) {
      const std::vector<std::int32_t> off = routing_offsets(g, experts);
      const std::int64_t capacity = off.back() + static_cast<std::int64_t>(g() % 50);  // room beyond the routed rows
      const grouped<Start> l{capacity, kb, experts, off.data()};
      INFO("E=" << experts << " scale cols " << kb << " routed " << off.back() << " capacity " << capacity);
      REQUIRE(l.padded_rows() == (capacity + 127 * experts + 127) / 128 * 128);
      REQUIRE(l.size_bytes() == l.padded_rows() * ((kb + 3) / 4 * 4));
      std::vector<int> hits(static_cast<std::size_t>(l.size_bytes()), 0);
      std::vector<char> routed(static_cast<std::size_t>(l.size_bytes()), 0);  // by (scale-tensor row, column)
      std::int64_t previous_end = 0;
      for (int e = 0; e < experts; ++e) {
        const auto b = l.expert(e);
        REQUIRE(b.start_row == reference_start<Start>(off, e));
        REQUIRE(b.start_row % 128 == 0);
        REQUIRE(b.start_row >= previous_end);  // bands never overlap
        REQUIRE(b.layout.rows == off[e + 1] - off[e]);
        previous_end = b.start_row + b.layout.padded_rows();
        REQUIRE(previous_end <= l.padded_rows());
        for (std::int64_t r = off[e]; r < off[e + 1]; ++r) {
          REQUIRE(l.expert_of(r) == e);
          for (std::int64_t k = 0; k < kb; ++k) {
            const std::int64_t o = l.offset(r, k);
            REQUIRE(o == b.start_row * l.padded_cols() + b.layout.offset(r - off[e], k));
            ++hits[static_cast<std::size_t>(o)];
            routed[static_cast<std::size_t>((b.start_row + r - off[e]) * l.padded_cols() + k)] = 1;
          }
        }
      }
      // Every routed scale has its own byte; every other byte is padding.
      std::int64_t data = 0;
      for (int h : hits) {
        REQUIRE(h <= 1);
        data += h;
      }
      REQUIRE(data == off.back() * kb);
      if (experts <= 33 && kb <= 9) {  // is_padding is O(E) per call
        // is_padding is exactly "no routed scale here", position by position.
        std::int64_t wrong = 0, first_wrong = -1;
        for (std::int64_t r = 0; r < l.padded_rows(); ++r)
          for (std::int64_t k = 0; k < l.padded_cols(); ++k) {
            const std::int64_t i = r * l.padded_cols() + k;
            if (l.is_padding(r, k) == static_cast<bool>(routed[static_cast<std::size_t>(i)])) {
              if (wrong++ == 0) first_wrong = i;
            }
          }
        INFO("first wrong is_padding at row " << first_wrong / l.padded_cols() << ", column " << first_wrong % l.padded_cols());
        REQUIRE(wrong == 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("grouped swizzled 128x4, vLLM's padded prefix sums: per-expert bands, a bijection onto the routed scales", "[scale_layout]") {
  check_grouped<padded_prefix_sum>("grouped prefix");
}

TEST_CASE("grouped swizzled 128x4, TensorRT-LLM's offset bound: per-expert bands, a bijection onto the routed scales", "[scale_layout]") {
  check_grouped<offset_bound>("grouped bound");
}
