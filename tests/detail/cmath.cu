// detail/cmath.cuh's round_up against the arithmetic it stands for, on the CCCL this build uses
// (cuda::round_up from CCCL 3.0 on; tests/compile/cccl_minimum.cu checks the fallback against
// CCCL 2.8): exact multiples unchanged, one past them up, the common type of the operands, and
// random operands against ceil(a / b) * b in 64 bits.
#include <fp4fuse/detail/cmath.cuh>

#include "../test_support.hpp"
#include "round_up_asserts.cuh"

TEST_CASE("detail::round_up: the next multiple, in the operands' common type", "[cmath]") {
  auto g = fp4fuse_test::rng("round_up");
  for (int i = 0; i < 100000; ++i) {
    const std::int64_t b = static_cast<std::int64_t>(g() % 4096) + 1;
    const std::int64_t a = static_cast<std::int64_t>(g() % (std::int64_t{1} << 40));
    INFO("a = " << a << ", b = " << b);
    CHECK(fp4fuse::detail::round_up(a, b) == (a + b - 1) / b * b);
    const int ai = static_cast<int>(a % (1 << 30)), bi = static_cast<int>(b);
    CHECK(fp4fuse::detail::round_up(ai, bi) == (ai + bi - 1) / bi * bi);
  }
}
