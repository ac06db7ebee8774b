// E4M3 satfinite encode/decode against the toolkit's cuda_fp8.h; on the GPU, the hardware cvt
// against the software path on all 2^32 floats and device against host.
#include <fp4fuse/e4m3.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gpu_support.cuh"
#include "test_support.hpp"

using namespace fp4fuse_test;

namespace {

std::uint8_t toolkit_e4m3(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }

std::size_t mismatches_vs_toolkit(const std::vector<std::uint32_t>& inputs) {
  return count_mismatches(inputs, [](float x) { return fp4fuse::e4m3_encode(x); }, toolkit_e4m3);
}

/// Every E4M3 value, every midpoint between neighbours, the saturation tie 464 and 2^-10.
std::vector<float> e4m3_boundaries() {
  std::vector<float> values;
  for (int c = 0; c < 0x7F; ++c) {
    values.push_back(fp4fuse::e4m3_decode(static_cast<std::uint8_t>(c)));
  }
  std::vector<float> out = values;
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    out.push_back((values[i] + values[i + 1]) * 0.5f);  // exact in float
  }
  out.push_back(464.0f);
  out.push_back(480.0f);
  out.push_back(0.0009765625f);  // 2^-10
  out.push_back(3.4028235e38f);
  return out;
}

struct encode_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const { return fp4fuse::e4m3_encode(cuda::std::bit_cast<float>(u)); }
};
struct software_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    return fp4fuse::e4m3_encode_software(cuda::std::bit_cast<float>(u));
  }
};
struct pair_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    const float lo = cuda::std::bit_cast<float>(u);
    const float hi = cuda::std::bit_cast<float>(u * 0x9E3779B9u);
    return fp4fuse::e4m3x2_encode(lo, hi);
  }
};
struct decode_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    return cuda::std::bit_cast<std::uint32_t>(fp4fuse::e4m3_decode(static_cast<std::uint8_t>(u)));
  }
};

struct device_sw {
  __device__ std::uint32_t operator()(std::uint32_t u) const {
    return fp4fuse::e4m3_encode_software(cuda::std::bit_cast<float>(u));
  }
};
struct device_hw {
  __device__ std::uint32_t operator()(std::uint32_t u) const { return fp4fuse::e4m3_encode(cuda::std::bit_cast<float>(u)); }
};

}  // namespace

static_assert(fp4fuse::e4m3_encode_software(464.0f) == 0x7E, "464 ties to 448");
static_assert(fp4fuse::e4m3_encode_software(-0.0f) == 0x80, "-0");
static_assert(fp4fuse::e4m3_decode(0x01) == 0.001953125f, "min subnormal");

TEST_CASE("e4m3: the satfinite table of the reference doc", "[e4m3]") {
  CHECK(int(fp4fuse::e4m3_encode(float_of(0x7FC00000u))) == 0x7F);
  CHECK(int(fp4fuse::e4m3_encode(float_of(0xFFC00000u))) == 0x7F);
  CHECK(int(fp4fuse::e4m3_encode(float_of(0x7F800000u))) == 0x7E);
  CHECK(int(fp4fuse::e4m3_encode(float_of(0xFF800000u))) == 0xFE);
  CHECK(int(fp4fuse::e4m3_encode(464.0f)) == 0x7E);
  CHECK(int(fp4fuse::e4m3_encode(464.00003f)) == 0x7E);
  CHECK(int(fp4fuse::e4m3_encode(1e10f)) == 0x7E);
  CHECK(int(fp4fuse::e4m3_encode(0.0009765625f)) == 0x00);
  CHECK(int(fp4fuse::e4m3_encode(0.00146484375f)) == 0x01);
  CHECK(int(fp4fuse::e4m3_encode(-0.0f)) == 0x80);
}

TEST_CASE("e4m3: every half and bfloat16 value matches the toolkit", "[e4m3]") {
  std::vector<std::uint32_t> inputs;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    inputs.push_back(i << 16);
    __half_raw h;
    h.x = static_cast<unsigned short>(i);
    inputs.push_back(bits_of(__half2float(__half(h))));
  }
  CHECK(mismatches_vs_toolkit(inputs) == 0);
}

TEST_CASE("e4m3: every float within 16 ulps of a value, midpoint or saturation point", "[e4m3]") {
  CHECK(mismatches_vs_toolkit(floats_near(e4m3_boundaries())) == 0);
}

TEST_CASE("e4m3: specials", "[e4m3]") { CHECK(mismatches_vs_toolkit(special_floats()) == 0); }

TEST_CASE("e4m3: 10^8 random float bit patterns match the toolkit", "[e4m3]") {
  CHECK(mismatches_vs_toolkit(random_bits(100000000, "e4m3 random")) == 0);
}

TEST_CASE("e4m3: all 2^32 floats match the toolkit", "[exhaustive][e4m3]") {
  CHECK(count_all_floats([](float x) { return fp4fuse::e4m3_encode(x) != toolkit_e4m3(x); }) == 0);
}

TEST_CASE("e4m3: pair order and decode of all 256 codes", "[e4m3]") {
  auto g = rng("e4m3 pair");
  for (int i = 0; i < 100000; ++i) {
    const float lo = random_magnitude(g, -12, 10);
    const float hi = random_magnitude(g, -12, 10);
    REQUIRE(fp4fuse::e4m3x2_encode(lo, hi) ==
            __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3));
  }
  for (int c = 0; c < 256; ++c) {
    const float got = fp4fuse::e4m3_decode(static_cast<std::uint8_t>(c));
    const float want = __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), __NV_E4M3)));
    INFO("code " << c);
    if (want != want) {
      CHECK(bits_of(got) == 0x7FC00000u);
      CHECK((bits_of(want) >> 31) == 0u);
    } else {
      CHECK(bits_of(got) == bits_of(want));
    }
  }
}

TEST_CASE("e4m3 [gpu]: device encode (hardware cvt from sm_89) equals host", "[gpu][e4m3]") {
  CHECK(device_matches_host(all_bfloat16_as_float_bits(), encode_op{}, "e4m3 bf16") == 0);
  CHECK(device_matches_host(floats_near(e4m3_boundaries()), encode_op{}, "e4m3 boundaries") == 0);
  CHECK(device_matches_host(special_floats(), encode_op{}, "e4m3 specials") == 0);
  CHECK(device_matches_host_random(encode_op{}, "e4m3 device random") == 0);
  CHECK(device_matches_host_random(software_op{}, "e4m3 device software random", 100000000) == 0);
  CHECK(device_matches_host(random_bits(1 << 22, "e4m3 device pair"), pair_op{}, "e4m3x2") == 0);
  std::vector<std::uint32_t> codes(256);
  for (std::uint32_t i = 0; i < 256; ++i) codes[i] = i;
  CHECK(device_matches_host(codes, decode_op{}, "e4m3 decode") == 0);
}

TEST_CASE("e4m3 [gpu]: hardware and software paths agree on all 2^32 floats", "[gpu][e4m3]") {
  std::uint32_t first = 0;
  const unsigned long long bad = device_all_floats_agree(device_hw{}, device_sw{}, &first);
  INFO("first mismatch " << hex32(first));
  CHECK(bad == 0);
}
