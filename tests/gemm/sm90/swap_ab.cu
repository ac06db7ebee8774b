// gemm/sm90/swap_ab.cuh on the host: how the experimental swap-AB kernel cuts an expert's rows
// into token chunks (every row once, in order, balanced widths of 16 up to 192). The kernel itself
// runs in tests/gemm/grouped.cu's plan loops.
#include <fp4fuse/gemm/sm90/swap_ab.cuh>

#include <algorithm>

#include "../../test_support.hpp"

TEST_CASE("token_chunk_of: the swap-AB kernel's token chunks cover each expert's rows once, at widths of 16 up to 192", "[gemm][swap_ab]") {
  for (int rows = 1; rows <= 2000; ++rows) {
    constexpr int max_tokens = 192;
    const int chunks = (rows + max_tokens - 1) / max_tokens;
    int next = 0, widest = 0;
    for (int c = 0; c < chunks; ++c) {
      const auto t = fp4fuse::gemm::sm90::detail::token_chunk_of<max_tokens>(rows, c);
      INFO("rows " << rows << " chunk " << c << ": token0 " << t.token0 << " tokens " << t.tokens << " width " << t.width);
      REQUIRE(t.token0 == next);  // contiguous, in order
      REQUIRE(t.tokens >= 1);
      REQUIRE((t.width % 16 == 0 && t.width >= t.tokens && t.width < t.tokens + 16 && t.width <= max_tokens));
      REQUIRE(t.last == (c == chunks - 1));
      next += t.tokens;
      widest = std::max(widest, t.width);
    }
    REQUIRE(next == rows);  // every row once
    // Balanced: no chunk is wider than the rows spread evenly, rounded up to 16.
    CHECK(widest == (((rows + chunks - 1) / chunks + 15) / 16) * 16);
  }
}
