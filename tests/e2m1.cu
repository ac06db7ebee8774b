// E2M1 encode/decode against the toolkit's cuda_fp4.h (host emulation) and, on the GPU, device
// against host and against the toolkit's device conversion on all 2^32 floats.
#include <fp4fuse/e2m1.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>

#include "gpu_support.cuh"
#include "test_support.hpp"

using namespace fp4fuse_test;

namespace {

std::uint8_t toolkit_e2m1(float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); }

std::size_t mismatches_vs_toolkit(const std::vector<std::uint32_t>& inputs) {
  return count_mismatches(inputs, [](float x) { return fp4fuse::e2m1_encode(x); }, toolkit_e2m1);
}

const std::vector<float> e2m1_boundaries = {0.0f,  0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f,
                                            2.5f,  3.0f,  3.5f, 4.0f,  5.0f, 6.0f,  7.0f,  8.0f, 1e30f,
                                            3.4e38f, 1.17549435e-38f};

struct encode_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const { return fp4fuse::e2m1_encode(float_of_bits(u)); }
  __host__ __device__ static float float_of_bits(std::uint32_t u) { return cuda::std::bit_cast<float>(u); }
};
struct toolkit_encode_op {
  __device__ std::uint32_t operator()(std::uint32_t u) const {
    return __nv_cvt_float_to_fp4(cuda::std::bit_cast<float>(u), __NV_E2M1, cudaRoundNearest);
  }
};
struct device_encode_op {
  __device__ std::uint32_t operator()(std::uint32_t u) const { return fp4fuse::e2m1_encode(cuda::std::bit_cast<float>(u)); }
};
/// Packs 8 values derived from one seed word (varied magnitudes and signs); exercises x8/x16 order.
struct pack_op {
  __host__ __device__ static float derive(std::uint32_t u, int i) {
    std::uint32_t h = u * 0x9E3779B9u + static_cast<std::uint32_t>(i) * 0x85EBCA6Bu;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return static_cast<float>(static_cast<int>(h & 0xFFFu) - 2048) / 256.0f;  // [-8, 8) in 1/256 steps
  }
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    float v[8];
    for (int i = 0; i < 8; ++i) v[i] = derive(u, i);
    return fp4fuse::e2m1x8_encode(v);
  }
};
/// Packs four and eight values of which one is the input's own bit pattern (every special, NaN
/// payload and boundary neighbour the input sets hold) and the rest derived as in `pack_op`: the
/// x4 and x8 encoders, their NaN fallbacks included, folded into one checksum word.
struct pack_special_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    const int own = static_cast<int>(((u >> 16) ^ (u >> 7)) & 7u);  // bf16 patterns vary bits 16+
    float v[8];
    for (int i = 0; i < 8; ++i) v[i] = i == own ? cuda::std::bit_cast<float>(u) : pack_op::derive(u, i);
    const float(&low)[4] = *reinterpret_cast<const float(*)[4]>(&v[0]);
    const float(&high)[4] = *reinterpret_cast<const float(*)[4]>(&v[4]);
    const std::uint32_t x4 = fp4fuse::e2m1x4_encode(low) | (static_cast<std::uint32_t>(fp4fuse::e2m1x4_encode(high)) << 16);
    return x4 ^ (fp4fuse::e2m1x8_encode(v) * 0x9E3779B9u);
  }
};
struct decode_op {
  __host__ __device__ std::uint32_t operator()(std::uint32_t u) const {
    const float2 f = fp4fuse::e2m1x2_decode_float2(static_cast<std::uint8_t>(u));
    const __half2 h = fp4fuse::e2m1x2_decode_half2(static_cast<std::uint8_t>(u));
    const __nv_bfloat162 b = fp4fuse::e2m1x2_decode_bfloat162(static_cast<std::uint8_t>(u));
    // Fold the three decodes into one checksum word that differs if any bit differs.
    const std::uint32_t hf = cuda::std::bit_cast<std::uint32_t>(__half22float2(h).x) ^
                             (cuda::std::bit_cast<std::uint32_t>(__half22float2(h).y) * 3u);
    const std::uint32_t bf = cuda::std::bit_cast<std::uint32_t>(__bfloat162float(b.x)) ^
                             (cuda::std::bit_cast<std::uint32_t>(__bfloat162float(b.y)) * 5u);
    return cuda::std::bit_cast<std::uint32_t>(f.x) ^ (cuda::std::bit_cast<std::uint32_t>(f.y) * 7u) ^ hf ^ (bf * 11u);
  }
};

}  // namespace

static_assert(fp4fuse::e2m1_encode_software(0.25f) == 0x0, "0.25 ties to 0");
static_assert(fp4fuse::e2m1_encode_software(0.75f) == 0x2, "0.75 ties to 1");
static_assert(fp4fuse::e2m1_encode_software(5.0f) == 0x6, "5 ties to 4");
static_assert(fp4fuse::e2m1_encode_software(-0.0f) == 0x8, "-0 keeps its sign");
static_assert(fp4fuse::e2m1_decode(0x7) == 6.0f && fp4fuse::e2m1_decode(0x9) == -0.5f, "decode");

TEST_CASE("e2m1: the rounding table of the reference doc", "[e2m1]") {
  const struct { float x; std::uint8_t code; } table[] = {
      {0.25f, 0x0}, {0.2500001f, 0x1}, {0.7499999f, 0x1}, {0.75f, 0x2}, {1.25f, 0x2}, {1.2500001f, 0x3},
      {1.75f, 0x4}, {2.5f, 0x4},       {2.5000002f, 0x5}, {3.5f, 0x6},  {5.0f, 0x6},  {5.0000005f, 0x7},
      {6.0f, 0x7},  {1e30f, 0x7},      {-3.2f, 0xD},      {-0.1f, 0x8}, {-0.0f, 0x8}, {0.0f, 0x0}};
  for (const auto& row : table) {
    INFO("x = " << row.x);
    CHECK(int(fp4fuse::e2m1_encode(row.x)) == int(row.code));
    CHECK(int(toolkit_e2m1(row.x)) == int(row.code));
  }
}

TEST_CASE("e2m1: every half and bfloat16 value matches the toolkit", "[e2m1]") {
  std::vector<std::uint32_t> inputs;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    inputs.push_back(i << 16);  // bfloat16
    __half_raw h;
    h.x = static_cast<unsigned short>(i);
    inputs.push_back(bits_of(__half2float(__half(h))));
  }
  CHECK(mismatches_vs_toolkit(inputs) == 0);
}

TEST_CASE("e2m1: every float within 16 ulps of a boundary, tie or saturation point", "[e2m1]") {
  CHECK(mismatches_vs_toolkit(floats_near(e2m1_boundaries)) == 0);
}

TEST_CASE("e2m1: specials (signed zeros, Inf, NaN payloads, subnormals)", "[e2m1]") {
  CHECK(mismatches_vs_toolkit(special_floats()) == 0);
  CHECK(int(fp4fuse::e2m1_encode(float_of(0xFFC00000u))) == 0x7);  // -NaN -> +6, as the toolkit
  CHECK(int(fp4fuse::e2m1_encode(float_of(0xFF800000u))) == 0xF);  // -Inf -> -6
}

TEST_CASE("e2m1: 10^8 random float bit patterns match the toolkit", "[e2m1]") {
  CHECK(mismatches_vs_toolkit(random_bits(100000000, "e2m1 random")) == 0);
}

TEST_CASE("e2m1: all 2^32 floats match the toolkit", "[exhaustive][e2m1]") {
  CHECK(count_all_floats([](float x) { return fp4fuse::e2m1_encode(x) != toolkit_e2m1(x); }) == 0);
}

TEST_CASE("e2m1: packed forms put element i in nibble i", "[e2m1]") {
  auto g = rng("e2m1 pack");
  for (int trial = 0; trial < 100000; ++trial) {
    float v[16];
    for (float& x : v) {
      x = random_magnitude(g, -4, 4);
    }
    const std::uint64_t w = fp4fuse::e2m1x16_encode(v);
    const std::uint32_t w8 = fp4fuse::e2m1x8_encode(*reinterpret_cast<const float(*)[8]>(&v[8]));
    REQUIRE(static_cast<std::uint32_t>(w >> 32) == w8);
    for (int i = 0; i < 16; ++i) {
      REQUIRE(((w >> (4 * i)) & 0xF) == toolkit_e2m1(v[i]));
    }
    const std::uint16_t quad = fp4fuse::e2m1x4_encode(*reinterpret_cast<const float(*)[4]>(&v[4]));
    REQUIRE(quad == ((w >> 16) & 0xFFFF));
    const std::uint8_t pair = fp4fuse::e2m1x2_encode(v[0], v[1]);
    // The toolkit's float2 form uses the same order: .x in the low nibble.
    REQUIRE(pair == __nv_cvt_float2_to_fp4x2(make_float2(v[0], v[1]), __NV_E2M1, cudaRoundNearest));
  }
  float ramp[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  CHECK(fp4fuse::e2m1x8_encode(ramp) == 0x76543210u);
  const float quad[4] = {0.5f, -1.0f, 6.0f, 2.5f};  // the doc example: 2.5 ties to 2
  CHECK(fp4fuse::e2m1x4_encode(quad) == 0x47A1u);
}

TEST_CASE("e2m1: decode matches the toolkit for every nibble and byte", "[e2m1]") {
  for (int n = 0; n < 16; ++n) {
    const __half_raw want = __nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(n), __NV_E2M1);
    CHECK(bits_of(fp4fuse::e2m1_decode(static_cast<std::uint8_t>(n))) == bits_of(__half2float(__half(want))));
  }
  for (int b = 0; b < 256; ++b) {
    const __half2_raw want = __nv_cvt_fp4x2_to_halfraw2(static_cast<__nv_fp4x2_storage_t>(b), __NV_E2M1);
    const __half2 got = fp4fuse::e2m1x2_decode_half2(static_cast<std::uint8_t>(b));
    const __half2_raw got_raw = static_cast<__half2_raw>(got);
    CHECK(got_raw.x == want.x);
    CHECK(got_raw.y == want.y);
    const float2 f = fp4fuse::e2m1x2_decode_float2(static_cast<std::uint8_t>(b));
    CHECK(bits_of(f.x) == bits_of(fp4fuse::e2m1_decode(static_cast<std::uint8_t>(b & 0xF))));
    CHECK(bits_of(f.y) == bits_of(fp4fuse::e2m1_decode(static_cast<std::uint8_t>(b >> 4))));
    const __nv_bfloat162 bf = fp4fuse::e2m1x2_decode_bfloat162(static_cast<std::uint8_t>(b));
    CHECK(bits_of(__bfloat162float(bf.x)) == bits_of(f.x));
    CHECK(bits_of(__bfloat162float(bf.y)) == bits_of(f.y));
  }
}

TEST_CASE("e2m1 [gpu]: device encode equals host on all bfloat16 and 10^9 random floats", "[gpu][e2m1]") {
  CHECK(device_matches_host(all_bfloat16_as_float_bits(), encode_op{}, "e2m1 bf16") == 0);
  CHECK(device_matches_host(floats_near(e2m1_boundaries), encode_op{}, "e2m1 boundaries") == 0);
  CHECK(device_matches_host(special_floats(), encode_op{}, "e2m1 specials") == 0);
  CHECK(device_matches_host_random(encode_op{}, "e2m1 device random") == 0);
}

TEST_CASE("e2m1 [gpu]: device packing and decoding equal the host", "[gpu][e2m1]") {
  CHECK(device_matches_host(random_bits(1 << 22, "e2m1 device pack"), pack_op{}, "e2m1x8") == 0);
  CHECK(device_matches_host(all_bfloat16_as_float_bits(), pack_special_op{}, "e2m1x4/x8 bf16") == 0);
  CHECK(device_matches_host(special_floats(), pack_special_op{}, "e2m1x4/x8 specials") == 0);
  CHECK(device_matches_host(floats_near(e2m1_boundaries), pack_special_op{}, "e2m1x4/x8 boundaries") == 0);
  std::vector<std::uint32_t> bytes(256);
  for (std::uint32_t i = 0; i < 256; ++i) bytes[i] = i;
  CHECK(device_matches_host(bytes, decode_op{}, "e2m1 decode") == 0);
}

TEST_CASE("e2m1 [gpu]: device encode equals the toolkit's device conversion on all 2^32 floats", "[gpu][e2m1]") {
  std::uint32_t first = 0;
  const unsigned long long bad = device_all_floats_agree(device_encode_op{}, toolkit_encode_op{}, &first);
  INFO("first mismatch " << hex32(first));
  CHECK(bad == 0);
}
