// The per-tensor NVFP4 scale helpers.
#include <fp4fuse/global_scale.cuh>

#include <cfloat>
#include <cmath>

#include "test_support.hpp"

using namespace fp4fuse_test;

static_assert(fp4fuse::nvfp4_global_encode_scale(2688.0f) == 1.0f, "constexpr");

TEST_CASE("global scale: 2688 / amax with defined zero, Inf, NaN and overflow cases", "[global_scale]") {
  CHECK(fp4fuse::nvfp4_global_encode_scale(0.0f) == 1.0f);
  CHECK(fp4fuse::nvfp4_global_encode_scale(-0.0f) == 1.0f);
  CHECK(fp4fuse::nvfp4_global_encode_scale(INFINITY) == 1.0f);
  CHECK(fp4fuse::nvfp4_global_encode_scale(-INFINITY) == 1.0f);
  CHECK(fp4fuse::nvfp4_global_encode_scale(NAN) == 1.0f);
  CHECK(fp4fuse::nvfp4_global_encode_scale(1e-45f) == FLT_MAX);  // 2688 / denormal overflows
  CHECK(fp4fuse::nvfp4_global_encode_scale(-10.0f) == 268.8f);
  auto g = rng("global scale");
  for (int i = 0; i < 1000000; ++i) {
    const float amax = std::fabs(random_magnitude(g, -100, 127));
    const float S = fp4fuse::nvfp4_global_encode_scale(amax);
    REQUIRE(bits_of(S) == bits_of(2688.0f / amax));
    REQUIRE(bits_of(fp4fuse::nvfp4_global_decode_scale(S)) == bits_of(1.0f / S));
  }
}
