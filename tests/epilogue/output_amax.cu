// combine_output_amax (epilogue/output_amax.cuh) on the GPU: the warp reduction and the atomic on
// the float's bits give exactly the largest positive partial, whatever NaN, -0, negative or
// out-of-matrix partials the lanes pass; and its host rule (the host twins') on the CPU.
#include <fp4fuse/epilogue/output_amax.cuh>

#include <limits>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;

namespace {
/// Thread i of the grid passes locals[i] (inside[i]) to combine_output_amax.
__global__ void amax_kernel(const float* locals, const unsigned char* inside, float* amax) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  fp4fuse::combine_output_amax(amax, locals[i], inside[i] != 0);
}
}  // namespace

TEST_CASE("combine_output_amax [gpu]: NaN, -0 and negative locals contribute nothing", "[gpu][epilogue]") {
  // As unsigned bits a -0, a negative or a NaN ranks above every positive float: any of them,
  // passed once, would stick in *amax. Random mixes of them with positive values (finite,
  // subnormal, +Inf) over 4 warps in 2 CTAs; the result must be the largest positive local inside.
  auto g = rng("combine_output_amax");
  constexpr int threads = 128;
  std::uniform_real_distribution<float> u(0.0f, 100.0f);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> locals(threads);
    std::vector<unsigned char> inside(threads);
    const bool positives = trial % 5 != 0;  // every fifth trial: no positive value at all, the result stays +0
    for (int i = 0; i < threads; ++i) {
      switch (g() % 7) {
        case 0: locals[i] = -0.0f; break;
        case 1: locals[i] = float_of(static_cast<std::uint32_t>(g()) | 0x7FC00000u); break;  // NaN of either sign
        case 2: locals[i] = -u(g) - 1.0f; break;
        case 3: locals[i] = -std::numeric_limits<float>::infinity(); break;
        case 4: locals[i] = positives ? float_of(static_cast<std::uint32_t>(g() % 0x7FFFFFu) + 1u) : 0.0f; break;  // subnormal
        case 5: locals[i] = positives && g() % 50 == 0 ? std::numeric_limits<float>::infinity() : 0.0f; break;
        default: locals[i] = positives ? u(g) : -0.0f; break;
      }
      inside[i] = g() % 4 != 0;
    }
    float want = 0.0f;
    for (int i = 0; i < threads; ++i)
      if (inside[i] && locals[i] > want) want = locals[i];
    device_buffer d_locals(threads * 4), d_inside(threads), d_amax(4);
    d_locals.upload(locals.data(), threads * 4);
    d_inside.upload(inside.data(), threads);
    const float zero = 0.0f;
    d_amax.upload(&zero, 4);
    amax_kernel<<<2, threads / 2>>>(d_locals.as<float>(), d_inside.as<unsigned char>(), d_amax.as<float>());
    FP4FUSE_TEST_LAUNCHED();
    float got;
    const auto raw = d_amax.download();
    std::memcpy(&got, raw.data(), 4);
    INFO("trial " << trial << " want " << want << " got " << got);
    REQUIRE(bits_of(got) == bits_of(want));
    REQUIRE(d_amax.guard_intact());
  }
}

TEST_CASE("combine_output_amax's host rule: positive values only, the maximum", "[epilogue]") {
  float a = 0.0f;
  for (float v : {1.5f, -3.0f, std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.75f, 2.0f, -std::numeric_limits<float>::infinity()}) {
    fp4fuse::detail::combine_output_amax_host(&a, v);
  }
  CHECK(bits_of(a) == bits_of(2.0f));
  fp4fuse::detail::combine_output_amax_host(&a, std::numeric_limits<float>::infinity());
  CHECK(a == std::numeric_limits<float>::infinity());
}
