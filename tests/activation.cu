// The portable exp and the gated activations: accuracy against double precision (the host and
// device produce identical bits, see tests/kernels/swiglu_quantize.cu).
#include <fp4fuse/activation.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>

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

TEST_CASE("swiglu: bit-identical to the IEEE formula gate / (1 + exp(-gate)) * up, zero gates included", "[activation]") {
  // The reference: the formula as written before the zero gate's shortcut (add, division and
  // product each rounded once). Equal bits, or both NaN.
  const auto reference = [](float gate, float up) {
    return fp4fuse::detail::mul_rn(fp4fuse::detail::div_rn(gate, fp4fuse::detail::add_rn(1.0f, fp4fuse::detail::exp_portable(-gate))), up);
  };
  const auto same = [](float a, float b) { return (std::isnan(a) && std::isnan(b)) || fp4fuse_test::bits_of(a) == fp4fuse_test::bits_of(b); };
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 7.0f, -87.5f, 88.0f, 1e-30f, -1e-30f, 1e-45f, -1e-45f, 3.4e38f, -3.4e38f,
                            INFINITY, -INFINITY, NAN};
  std::size_t differ = 0, zero_gates = 0;
  for (float gate : specials) {
    for (float up : specials) {
      differ += !same(fp4fuse::activation::swiglu{}.apply(gate, up), reference(gate, up));
      zero_gates += gate == 0.0f;
    }
  }
  CHECK(zero_gates == 2 * std::size(specials));
  // Every bit pattern of up with a zero gate of each sign, and random bit patterns of both.
  auto g = rng("swiglu zero gate");
  for (std::uint64_t i = 0; i < (1ull << 32); i += 4093) {
    const float up = fp4fuse_test::float_of(static_cast<std::uint32_t>(i));
    differ += !same(fp4fuse::activation::swiglu{}.apply(0.0f, up), reference(0.0f, up));
    differ += !same(fp4fuse::activation::swiglu{}.apply(-0.0f, up), reference(-0.0f, up));
  }
  for (int i = 0; i < 2000000; ++i) {
    const float gate = fp4fuse_test::float_of(static_cast<std::uint32_t>(g())), up = fp4fuse_test::float_of(static_cast<std::uint32_t>(g()));
    differ += !same(fp4fuse::activation::swiglu{}.apply(gate, up), reference(gate, up));
  }
  CHECK(differ == 0);
}

TEST_CASE("activation [gpu]: device bits equal host bits", "[gpu][activation]") {
  CHECK(device_matches_host(random_bits(1 << 24, "act device"), act_op{}, "activations") == 0);
  CHECK(device_matches_host_random(exp_op{}, "exp device", 200000000) == 0);
}

namespace {
/// The fast activations' bound, relative to the double-precision value: 2^-20 + |z| 2^-23, z the
/// sigmoid's argument (gate, or alpha * clamped gate), for |z| <= 80; beyond, and for values below
/// 2^-126, the error is at most 1e-30 absolute (the result may flush to -0; docs/NUMERICS.md).
double fast_bound(double z) { return std::ldexp(1.0, -20) + std::fabs(z) * std::ldexp(1.0, -23); }

struct fast_pair {
  float silu, clamped;
};
__global__ void fast_activation_kernel(const float* gate, const float* up, fast_pair* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = {fp4fuse::activation::swiglu_fast{}.apply(gate[i], up[i]), fp4fuse::activation::swiglu_clamped_fast{}.apply(gate[i], up[i])};
  }
}

/// Worst relative error (in units of the bound) of swiglu_fast and swiglu_clamped_fast results
/// against double precision.
void fast_errors(const std::vector<float>& gate, const std::vector<float>& up, const std::vector<fast_pair>& got, double& worst_silu,
                 double& worst_clamped, double& worst_silu_rel, double& worst_clamped_rel) {
  worst_silu = worst_clamped = worst_silu_rel = worst_clamped_rel = 0.0;
  const double alpha = 1.702f, limit = 7.0f;
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const double gd = gate[i], ud = up[i];
    const double silu = gd / (1.0 + std::exp(-gd)) * ud;
    const double gc = std::min(gd, limit), uc = std::clamp(ud, -limit, limit);
    const double clamped = gc / (1.0 + std::exp(-alpha * gc)) * (uc + 1.0);
    // Results below float's smallest normal may flush to zero (ftz): there the error is absolute.
    const auto rel = [](double got_v, double want) {
      const double tiny = std::ldexp(1.0, -126);
      if (std::fabs(want) < tiny) return std::fabs(got_v - want) <= tiny ? 0.0 : 1.0;
      return std::fabs(got_v - want) / std::fabs(want);
    };
    double rs = rel(got[i].silu, silu), rc = rel(got[i].clamped, clamped);
    // Beyond |z| = 80 the exponential nears float's range (it overflows at 88.7 and the result
    // flushes to -0); the exact value is below 1e-30 there, so the error is absolute.
    if (std::fabs(alpha * gc) > 80.0) rc = std::fabs(got[i].clamped - clamped) <= 1e-30 ? 0.0 : 1.0;
    if (std::fabs(gd) > 80.0) rs = std::fabs(got[i].silu - silu) <= 1e-30 ? 0.0 : 1.0;
    worst_silu = std::max(worst_silu, rs / fast_bound(gd));
    worst_clamped = std::max(worst_clamped, rc / fast_bound(alpha * gc));
    worst_silu_rel = std::max(worst_silu_rel, rs);
    worst_clamped_rel = std::max(worst_clamped_rel, rc);
  }
}

/// Gates over [-80, 80] (uniform, and dense near 0 where silu changes sign), ups over [-8, 8].
void fast_inputs(std::vector<float>& gate, std::vector<float>& up, std::size_t n, const char* salt) {
  auto g = rng(salt);
  std::uniform_real_distribution<float> wide(-80.0f, 80.0f), narrow(-8.0f, 8.0f), tiny(-1e-3f, 1e-3f);
  gate.resize(n);
  up.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    gate[i] = i % 4 == 0 ? wide(g) : i % 4 == 1 ? tiny(g) : narrow(g);
    up[i] = narrow(g);
    if (up[i] == 0.0f) up[i] = 1.0f;  // a zero product has no relative error to measure
    if (gate[i] == 0.0f) gate[i] = 0.5f;
  }
}
}  // namespace

TEST_CASE("fast activations: host path (std::exp2, IEEE division) within the documented bound", "[activation]") {
  std::vector<float> gate, up;
  fast_inputs(gate, up, 2000000, "fast host");
  std::vector<fast_pair> got(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    got[i] = {fp4fuse::activation::swiglu_fast{}.apply(gate[i], up[i]), fp4fuse::activation::swiglu_clamped_fast{}.apply(gate[i], up[i])};
  }
  double ws, wc, rs, rc;
  fast_errors(gate, up, got, ws, wc, rs, rc);
  INFO("host worst: swiglu_fast " << rs << " relative (" << ws << " of the bound), swiglu_clamped_fast " << rc << " (" << wc << ")");
  CHECK(ws <= 1.0);
  CHECK(wc <= 1.0);
  CHECK(std::isnan(fp4fuse::activation::swiglu_clamped_fast{}.apply(NAN, 1.0f)));
  CHECK(std::isnan(fp4fuse::activation::swiglu_fast{}.apply(NAN, 1.0f)));
}

TEST_CASE("fast activations [gpu]: hardware ex2/rcp within the documented bound of double precision", "[gpu][activation]") {
  std::vector<float> gate, up;
  fast_inputs(gate, up, std::size_t(1) << 24, "fast device");
  const std::size_t n = gate.size();
  float *d_gate = nullptr, *d_up = nullptr;
  fast_pair* d_out = nullptr;
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_gate, n * 4));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_up, n * 4));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_out, n * sizeof(fast_pair)));
  FP4FUSE_TEST_CUDA(cudaMemcpy(d_gate, gate.data(), n * 4, cudaMemcpyHostToDevice));
  FP4FUSE_TEST_CUDA(cudaMemcpy(d_up, up.data(), n * 4, cudaMemcpyHostToDevice));
  FP4FUSE_TEST_CUDA(cudaMemset(d_out, 0xFF, n * sizeof(fast_pair)));  // NaN poison: any unwritten result fails
  fast_activation_kernel<<<1024, 256>>>(d_gate, d_up, d_out, n);
  FP4FUSE_TEST_LAUNCHED();
  std::vector<fast_pair> got(n);
  FP4FUSE_TEST_CUDA(cudaMemcpy(got.data(), d_out, n * sizeof(fast_pair), cudaMemcpyDeviceToHost));
  FP4FUSE_TEST_CUDA(cudaFree(d_gate));
  FP4FUSE_TEST_CUDA(cudaFree(d_up));
  FP4FUSE_TEST_CUDA(cudaFree(d_out));
  double ws, wc, rs, rc;
  fast_errors(gate, up, got, ws, wc, rs, rc);
  std::size_t host_differs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    host_differs += cuda::std::bit_cast<std::uint32_t>(got[i].silu) != cuda::std::bit_cast<std::uint32_t>(fp4fuse::activation::swiglu_fast{}.apply(gate[i], up[i]));
  }
  WARN("device worst: swiglu_fast " << rs << " relative (" << ws << " of the bound), swiglu_clamped_fast " << rc << " (" << wc
                                    << "); device != host bits for " << host_differs << " of " << n << " swiglu_fast values");
  CHECK(ws <= 1.0);
  CHECK(wc <= 1.0);
  // Not bit-identical to the host by design: a test that they differ somewhere keeps the
  // documentation honest (if the toolchain ever made them agree, NUMERICS.md should say so).
  CHECK(host_differs > 0);
}
