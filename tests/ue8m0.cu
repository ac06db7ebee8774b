// UE8M0 encode (round up and toward zero, satfinite) and decode against the toolkit.
#include <fp4fuse/ue8m0.cuh>

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cmath>
#include "gpu_support.cuh"
#include "test_support.hpp"

using namespace fp4fuse_test;
using fp4fuse::ue8m0_rounding;

namespace {

std::uint8_t toolkit_ue8m0(float x, ue8m0_rounding r) {
  return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, r == ue8m0_rounding::up ? cudaRoundPosInf : cudaRoundZero);
}

std::size_t mismatches_vs_toolkit(const std::vector<std::uint32_t>& inputs) {
  const auto up = [](float x) { return fp4fuse::ue8m0_encode(x, ue8m0_rounding::up); };
  const auto up_oracle = [](float x) { return toolkit_ue8m0(x, ue8m0_rounding::up); };
  const auto rz = [](float x) { return fp4fuse::ue8m0_encode(x, ue8m0_rounding::toward_zero); };
  const auto rz_oracle = [](float x) { return toolkit_ue8m0(x, ue8m0_rounding::toward_zero); };
  return count_mismatches(inputs, up, up_oracle) + count_mismatches(inputs, rz, rz_oracle);
}

std::vector<float> powers_of_two() {
  std::vector<float> v;
  for (int e = -149; e <= 127; ++e) {
    v.push_back(std::ldexp(1.0f, e));
  }
  v.push_back(3.4028235e38f);
  return v;
}

struct encode_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    const float x = cuda::std::bit_cast<float>(u);
    return fp4fuse::ue8m0_encode(x, ue8m0_rounding::up) | (fp4fuse::ue8m0_encode(x, ue8m0_rounding::toward_zero) << 8);
  }
};

}  // namespace

static_assert(fp4fuse::ue8m0_encode_software(1.0f, ue8m0_rounding::up) == 127, "exact power");
static_assert(fp4fuse::ue8m0_encode_software(1.5f, ue8m0_rounding::toward_zero) == 127, "rz");
static_assert(fp4fuse::ue8m0_decode(128) == 2.0f, "decode");

TEST_CASE("ue8m0: every bfloat16 and every float near a power of two matches the toolkit", "[ue8m0]") {
  CHECK(mismatches_vs_toolkit(all_bfloat16_as_float_bits()) == 0);
  CHECK(mismatches_vs_toolkit(floats_near(powers_of_two())) == 0);
  // The bf16 round-up step: floats just above a bf16 value, including carries into the exponent.
  std::vector<std::uint32_t> carries;
  for (std::uint32_t hi = 0; hi < 0x7F81u; hi += 7) {
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x8000u, 0xFFFFu}) {
      carries.push_back((hi << 16) | lo);
    }
  }
  CHECK(mismatches_vs_toolkit(carries) == 0);
  CHECK(mismatches_vs_toolkit(special_floats()) == 0);
}

TEST_CASE("ue8m0: 10^8 random float bit patterns match the toolkit", "[ue8m0]") {
  CHECK(mismatches_vs_toolkit(random_bits(100000000, "ue8m0 random")) == 0);
}

TEST_CASE("ue8m0: all 2^32 floats match the toolkit", "[exhaustive][ue8m0]") {
  CHECK(count_all_floats([](float x) {
          return fp4fuse::ue8m0_encode(x, ue8m0_rounding::up) != toolkit_ue8m0(x, ue8m0_rounding::up) ||
                 fp4fuse::ue8m0_encode(x, ue8m0_rounding::toward_zero) != toolkit_ue8m0(x, ue8m0_rounding::toward_zero);
        }) == 0);
}

TEST_CASE("ue8m0: decode of all 256 codes matches the toolkit", "[ue8m0]") {
  for (int c = 0; c < 256; ++c) {
    const __nv_bfloat16_raw want = __nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(c));
    const float w = __bfloat162float(__nv_bfloat16(want));
    const float got = fp4fuse::ue8m0_decode(static_cast<std::uint8_t>(c));
    INFO("code " << c);
    if (w != w) {
      CHECK(got != got);
    } else {
      CHECK(bits_of(got) == bits_of(w));
    }
  }
}

TEST_CASE("ue8m0 [gpu]: device encode equals host", "[gpu][ue8m0]") {
  CHECK(device_matches_host(all_bfloat16_as_float_bits(), encode_op{}, "ue8m0 bf16") == 0);
  CHECK(device_matches_host(floats_near(powers_of_two()), encode_op{}, "ue8m0 powers") == 0);
  CHECK(device_matches_host_random(encode_op{}, "ue8m0 device random") == 0);
}
