// The MXFP4 codec (block_codec<format::mxfp4<Recipe>>) against references written from the OCP MX formula and the round-up
// variant; dequantization; device against host.
#include <fp4fuse/mxfp4.cuh>

#include <cmath>

#include "block_generators.hpp"
#include "gpu_support.cuh"
#include "reference_recipes.hpp"
#include "test_support.hpp"

using namespace fp4fuse_test;

namespace {

template <class Recipe>
using codec = fp4fuse::block_codec<fp4fuse::format::mxfp4<Recipe>>;
using mxfp4_block = fp4fuse::quantized_block<fp4fuse::format::mxfp4<>>;

template <class Recipe>
std::size_t compare_with_reference(reference::block_result (*ref)(const float (&)[32]), const char* salt, int trials) {
  auto g = rng(salt);
  const codec<Recipe> q;
  std::size_t bad = 0;
  for (int k = 0; k < static_cast<int>(block_kind::count); ++k) {
    for (int t = 0; t < trials; ++t) {
      float x[32];
      fill_block(static_cast<block_kind>(k), g, x);
      const mxfp4_block got = q.quantize(x);
      const reference::block_result want = ref(x);
      bool ok = got.scale == want.scale;
      for (int i = 0; i < 32; ++i) {
        ok = ok && ((got.packed[i / 8] >> (4 * (i % 8))) & 0xF) == want.codes[i];
      }
      if (!ok) {
        if (bad < 5) UNSCOPED_INFO(block_kind_name(static_cast<block_kind>(k)) << " scale " << int(got.scale) << " vs " << int(want.scale));
        ++bad;
      }
    }
  }
  return bad;
}

__global__ void mx_kernel(const float* x, mxfp4_block* out, int blocks, bool round_up) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  float v[32];
  for (int i = 0; i < 32; ++i) v[i] = x[b * 32 + i];
  out[b] = round_up ? codec<fp4fuse::recipe::mx_round_up>().quantize(v) : codec<fp4fuse::recipe::mx_ocp>().quantize(v);
}

}  // namespace

TEST_CASE("mxfp4 mx_ocp: bit-identical to the OCP MX formula", "[mxfp4]") {
  CHECK(compare_with_reference<fp4fuse::recipe::mx_ocp>(reference::ocp_mxfp4, "mx ocp", 20000) == 0);
}

TEST_CASE("mxfp4 mx_round_up: bit-identical to ue8m0_rp(amax / 6)", "[mxfp4]") {
  CHECK(compare_with_reference<fp4fuse::recipe::mx_round_up>(reference::round_up_mxfp4, "mx up", 20000) == 0);
}

TEST_CASE("mxfp4: special blocks and dequantization", "[mxfp4]") {
  float x[32] = {};
  mxfp4_block b = codec<fp4fuse::recipe::mx_ocp>().quantize(x);
  CHECK(b.scale == 0x00);
  CHECK((b.packed[0] | b.packed[1] | b.packed[2] | b.packed[3]) == 0u);
  x[7] = INFINITY;
  b = codec<fp4fuse::recipe::mx_ocp>().quantize(x);
  CHECK(b.scale == 0xFF);
  CHECK(b.packed[0] == 0x77777777u);

  auto g = rng("mx dequant");
  for (int t = 0; t < 20000; ++t) {
    float v[32];
    fill_block(block_kind::random_wide, g, v);
    const codec<fp4fuse::recipe::mx_round_up> up;
    const mxfp4_block q = up.quantize(v);
    float y[32];
    up.dequantize(q, y);
    REQUIRE(q.scale != 0xFF);  // random_wide blocks are finite
    const float scale = std::ldexp(1.0f, q.scale - 127);
    for (int i = 0; i < 32; ++i) {
      const int code = (q.packed[i / 8] >> (4 * (i % 8))) & 0xF;
      const float cv = __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(code), __NV_E2M1)));
      REQUIRE(bits_of(y[i]) == bits_of(cv * scale));
      // Round-up scales never saturate an element by more than the E2M1 half-step.
      REQUIRE(std::fabs(y[i] - v[i]) <= scale + 1e-38f);
    }
  }
}

TEST_CASE("mxfp4 [gpu]: device quantizers equal the host", "[gpu][mxfp4]") {
  auto g = rng("mx device");
  const int blocks = 1 << 19;
  std::vector<float> x(std::size_t(blocks) * 32);
  for (int b = 0; b < blocks; ++b) {
    float v[32];
    fill_block(static_cast<block_kind>(b % static_cast<int>(block_kind::count)), g, v);
    std::copy(v, v + 32, &x[std::size_t(b) * 32]);
  }
  float* d_x;
  mxfp4_block* d_out;
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_x, x.size() * 4));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_out, blocks * sizeof(mxfp4_block)));
  FP4FUSE_TEST_CUDA(cudaMemcpy(d_x, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
  for (bool round_up : {false, true}) {
    FP4FUSE_TEST_CUDA(cudaMemset(d_out, 0xA5, blocks * sizeof(mxfp4_block)));
    mx_kernel<<<(blocks + 255) / 256, 256>>>(d_x, d_out, blocks, round_up);
    FP4FUSE_TEST_LAUNCHED();
    std::vector<mxfp4_block> out(blocks);
    FP4FUSE_TEST_CUDA(cudaMemcpy(out.data(), d_out, blocks * sizeof(mxfp4_block), cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (int b = 0; b < blocks; ++b) {
      float v[32];
      std::copy(&x[std::size_t(b) * 32], &x[std::size_t(b) * 32] + 32, v);
      const mxfp4_block want = round_up ? codec<fp4fuse::recipe::mx_round_up>().quantize(v) : codec<fp4fuse::recipe::mx_ocp>().quantize(v);
      bool ok = want.scale == out[b].scale;
      for (int w = 0; w < 4; ++w) ok = ok && want.packed[w] == out[b].packed[w];
      bad += !ok;
    }
    INFO("round_up=" << round_up);
    CHECK(bad == 0);
  }
  FP4FUSE_TEST_CUDA(cudaFree(d_x));
  FP4FUSE_TEST_CUDA(cudaFree(d_out));
}
