// The gate/up column layouts (gate_up_layout.cuh): each maps the I output columns to 2I distinct
// input columns (gate and up together a bijection onto [0, 2I)), with the formulas of the table
// in the header, and the tags' traits.
#include <fp4fuse/gate_up_layout.cuh>

#include <vector>

#include "test_support.hpp"

namespace gate_up = fp4fuse::gate_up;

static_assert(gate_up::is_interleaved<gate_up::interleaved<8>> && !gate_up::is_interleaved<gate_up::separate> &&
                  !gate_up::is_interleaved<gate_up::split_gate_first>,
              "is_interleaved: interleaved<G> only");
static_assert(gate_up::interleaved<16>::granule == 16, "the granule");

namespace {

/// Every input column of [0, 2I) read exactly once, by gate or up, and the layout's own formula.
template <class Layout, class Gate, class Up>
void check_layout(std::int64_t I, const Gate& gate, const Up& up) {
  std::vector<int> hits(static_cast<std::size_t>(2 * I));
  for (std::int64_t c = 0; c < I; ++c) {
    const std::int64_t g = Layout::gate_col(c, I), u = Layout::up_col(c, I);
    REQUIRE(g == gate(c));
    REQUIRE(u == up(c));
    REQUIRE(g >= 0);
    REQUIRE(g < 2 * I);
    REQUIRE(u >= 0);
    REQUIRE(u < 2 * I);
    ++hits[static_cast<std::size_t>(g)];
    ++hits[static_cast<std::size_t>(u)];
  }
  for (int h : hits) REQUIRE(h == 1);
}

}  // namespace

TEST_CASE("gate_up layouts: gate and up columns are a bijection onto [0, 2I) with the documented formulas", "[gate_up]") {
  for (std::int64_t I : {16, 64, 96, 2880}) {
    INFO("I = " << I);
    check_layout<gate_up::split_gate_first>(I, [](std::int64_t c) { return c; }, [&](std::int64_t c) { return I + c; });
    check_layout<gate_up::split_up_first>(I, [&](std::int64_t c) { return I + c; }, [](std::int64_t c) { return c; });
    check_layout<gate_up::interleaved<1>>(I, [](std::int64_t c) { return 2 * c; }, [](std::int64_t c) { return 2 * c + 1; });
    check_layout<gate_up::interleaved<8>>(I, [](std::int64_t c) { return 16 * (c / 8) + c % 8; }, [](std::int64_t c) { return 16 * (c / 8) + 8 + c % 8; });
    check_layout<gate_up::interleaved<16>>(I, [](std::int64_t c) { return 32 * (c / 16) + c % 16; },
                                           [](std::int64_t c) { return 32 * (c / 16) + 16 + c % 16; });
  }
}
