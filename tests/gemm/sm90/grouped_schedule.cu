// gemm/sm90/grouped_schedule.cuh on the host: the search that maps a work unit to its group (an
// expert), against a brute-force owner of every unit, with many empty groups.
#include <fp4fuse/gemm/sm90/grouped_schedule.cuh>

#include <cstdint>
#include <vector>

#include "../../test_support.hpp"

using namespace fp4fuse_test;

TEST_CASE("group_of_unit: the grouped schedule finds each unit's group, empty groups skipped", "[gemm][schedule]") {
  auto g = rng("moe group search");
  for (int trial = 0; trial < 200; ++trial) {
    const int groups = 1 + static_cast<int>(g() % 300), tiles_n = 1 + static_cast<int>(g() % 40);
    std::vector<std::int32_t> first{0};
    std::vector<int> owner;  // brute force: the group of every unit
    for (int e = 0; e < groups; ++e) {
      const int rows = g() % 3 == 0 ? 0 : static_cast<int>(g() % 5);  // many empty groups
      first.push_back(first.back() + rows);
      for (int u = 0; u < rows * tiles_n; ++u) owner.push_back(e);
    }
    for (int u = 0; u < static_cast<int>(owner.size()); ++u) {
      REQUIRE(fp4fuse::gemm::sm90::detail::group_of_unit(first.data(), groups, tiles_n, u) == owner[static_cast<std::size_t>(u)]);
    }
  }
}
