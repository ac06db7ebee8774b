// The portable exp and the gated activations: accuracy against double precision (the host and
// device produce identical bits, see tests/kernels/swiglu_quantize.cu).
#include <fp4fuse/activation.cuh>

#include <cmath>

#include "gpu_support.cuh"
#include "test_support.hpp"

using namespace fp4fuse_test;

namespace {
double ulp_error(float got, double want) {
  if (std::isinf(want)) return std::isinf(got) && (got > 0) == (want > 0) ? 0.0 : 1e9;
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(static_cast<float>(want)), -126) - 23);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}
struct exp_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    // NaN payloads are not part of the contract (host and GPU arithmetic propagate them differently).
    const float r = fp4fuse::detail::exp_portable(cuda::std::bit_cast<float>(u));
    return r != r ? 0x7FFFFFFFu : cuda::std::bit_cast<std::uint32_t>(r);
  }
};
struct act_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    const float g = static_cast<float>(static_cast<int>(u & 0xFFFFu) - 32768) / 2048.0f;   // [-16, 16)
    const float up = static_cast<float>(static_cast<int>(u >> 16) - 32768) / 4096.0f;      // [-8, 8)
    const float a = fp4fuse::activation::swiglu{}.apply(g, up);
    const float b = fp4fuse::activation::swiglu_clamped{}.apply(g, up);
    const float c = fp4fuse::activation::geglu_tanh{}.apply(g, up);
    return cuda::std::bit_cast<std::uint32_t>(a) ^ (cuda::std::bit_cast<std::uint32_t>(b) * 3u) ^
           (cuda::std::bit_cast<std::uint32_t>(c) * 5u);
  }
};
}  // namespace

TEST_CASE("exp_portable: within 2 ulp of exp on [-87, 88], exact specials", "[activation]") {
  double worst = 0.0;
  for (std::uint32_t i = 0; i < 4000000; ++i) {
    const float x = -87.0f + 175.0f * (static_cast<float>(i) / 4000000.0f);
    worst = std::max(worst, ulp_error(fp4fuse::detail::exp_portable(x), std::exp(static_cast<double>(x))));
  }
  INFO("worst error " << worst << " ulp");
  CHECK(worst <= 2.0);
  CHECK(fp4fuse::detail::exp_portable(0.0f) == 1.0f);
  CHECK(std::isinf(fp4fuse::detail::exp_portable(89.0f)));
  CHECK(fp4fuse::detail::exp_portable(-104.0f) == 0.0f);
  CHECK(std::isnan(fp4fuse::detail::exp_portable(NAN)));
  // Subnormal results.
  CHECK(ulp_error(fp4fuse::detail::exp_portable(-100.0f), std::exp(-100.0)) <= 2.0);
}

TEST_CASE("activations: close to double-precision formulas", "[activation]") {
  auto g = rng("activation");
  std::uniform_real_distribution<float> d(-12.0f, 12.0f);
  for (int i = 0; i < 1000000; ++i) {
    const float gate = d(g), up = d(g);
    const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(gate)));
    const double silu = gate * sig * up;
    REQUIRE(std::fabs(fp4fuse::activation::swiglu{}.apply(gate, up) - silu) <= 1e-6 * std::fabs(silu) + 1e-30);
    const double gc = std::min(static_cast<double>(gate), 7.0), uc = std::clamp(static_cast<double>(up), -7.0, 7.0);
    const double gpt = gc / (1.0 + std::exp(-1.702 * gc)) * (uc + 1.0);
    REQUIRE(std::fabs(fp4fuse::activation::swiglu_clamped{}.apply(gate, up) - gpt) <= 1e-6 * std::fabs(gpt) + 1e-6);
    const double x = gate;
    const double gelu = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))) * up;
    REQUIRE(std::fabs(fp4fuse::activation::geglu_tanh{}.apply(gate, up) - gelu) <= 1e-6 * std::fabs(gelu) + 1e-6);
  }
  CHECK(std::isnan(fp4fuse::activation::swiglu_clamped{}.apply(NAN, 1.0f)));
  CHECK(fp4fuse::activation::swiglu_clamped{}.apply(100.0f, 100.0f) ==
        fp4fuse::activation::swiglu_clamped{}.apply(7.0f, 7.0f));
}

TEST_CASE("activation [gpu]: device bits equal host bits", "[gpu][activation]") {
  CHECK(device_matches_host(random_bits(1 << 24, "act device"), act_op{}, "activations") == 0);
  CHECK(device_matches_host_random(exp_op{}, "exp device", 200000000) == 0);
}
