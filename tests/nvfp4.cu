// The NVFP4 codec (block_codec<format::nvfp4<Recipe>>): fp4fuse's recipes against references
// written from TE's and vLLM's documented formulas, on random and adversarial blocks;
// dequantization; device against host.
#include <fp4fuse/nvfp4.cuh>

#include <cfloat>
#include <cmath>

#include "block_generators.hpp"
#include "gpu_support.cuh"
#include "reference_recipes.hpp"
#include "test_support.hpp"

using namespace fp4fuse_test;

namespace {

template <class Recipe>
using codec = fp4fuse::block_codec<fp4fuse::format::nvfp4<Recipe>>;
using te_codec = codec<fp4fuse::recipe::te_exact>;
using vllm_codec = codec<fp4fuse::recipe::vllm>;
using nvfp4_block = fp4fuse::quantized_block<fp4fuse::format::nvfp4<>>;

/// The block's 16 nibbles as one 64-bit word (element i in bits 4i+3..4i).
template <class Block>
__host__ __device__ std::uint64_t packed64(const Block& b) {
  return static_cast<std::uint64_t>(b.packed[0]) | (static_cast<std::uint64_t>(b.packed[1]) << 32);
}

template <class Recipe>
std::size_t compare_with_reference(reference::block_result (*ref)(const float (&)[16], float), const char* salt,
                                   int trials_per_kind) {
  auto g = rng(salt);
  std::size_t bad = 0;
  for (float S : test_global_scales(g)) {
    const codec<Recipe> q(S);
    for (int k = 0; k < static_cast<int>(block_kind::count); ++k) {
      for (int t = 0; t < trials_per_kind; ++t) {
        float x[16];
        fill_block(static_cast<block_kind>(k), g, x);
        const auto got = q.quantize(x);
        const fp4fuse::block_scale s = q.scale_for(q.block_amax(x));
        const reference::block_result want = ref(x, S);
        bool ok = got.scale == want.scale && s.code == want.scale && bits_of(s.multiplier) == bits_of(want.multiplier);
        for (int i = 0; i < 16; ++i) {
          ok = ok && ((packed64(got) >> (4 * i)) & 0xF) == want.codes[i];
        }
        if (!ok) {
          if (bad < 5) {
            UNSCOPED_INFO(block_kind_name(static_cast<block_kind>(k))
                          << " S=" << S << " scale " << int(got.scale) << " vs " << int(want.scale) << " mult "
                          << s.multiplier << " vs " << want.multiplier << " x0=" << x[0]);
          }
          ++bad;
        }
      }
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("nvfp4 te_exact: bit-identical to TransformerEngine's formula on random and adversarial blocks",
          "[nvfp4]") {
  CHECK(compare_with_reference<fp4fuse::recipe::te_exact>(reference::te_nvfp4, "nvfp4 te", 2000) == 0);
}

TEST_CASE("nvfp4 vllm: bit-identical on the host to vLLM's formula with exact reciprocals", "[nvfp4]") {
  CHECK(compare_with_reference<fp4fuse::recipe::vllm>(reference::vllm_nvfp4, "nvfp4 vllm", 2000) == 0);
}

TEST_CASE("nvfp4: the behaviour table of docs/NUMERICS.md", "[nvfp4]") {
  const float S = fp4fuse::nvfp4_global_encode_scale(10.0f);
  const te_codec te(S);
  const vllm_codec vl(S);
  float zeros[16];
  for (int i = 0; i < 16; ++i) zeros[i] = (i & 1) ? -0.0f : 0.0f;
  CHECK(te.quantize(zeros).scale == 0x00);
  CHECK(packed64(te.quantize(zeros)) == 0x8080808080808080ull);
  CHECK(packed64(vl.quantize(zeros)) == 0x8080808080808080ull);

  float tiny[16];
  for (int i = 0; i < 16; ++i) tiny[i] = (i & 1) ? -1e-8f : 1e-8f;  // amax*S/6 far below 2^-10
  CHECK(te.quantize(tiny).scale == 0x00);
  CHECK(packed64(te.quantize(tiny)) == 0xF7F7F7F7F7F7F7F7ull);  // +-6: x * FLT_MAX saturates
  CHECK(packed64(vl.quantize(tiny)) == 0x8080808080808080ull);  // +-0: multiplier 0

  float with_inf[16] = {1.0f, -1.0f};
  with_inf[5] = -INFINITY;
  const nvfp4_block b = te.quantize(with_inf);
  CHECK(b.scale == 0x7E);
  CHECK(((packed64(b) >> 20) & 0xF) == 0xF);

  float with_nan[16] = {2.0f, -4.0f};
  with_nan[3] = NAN;
  const nvfp4_block n = te.quantize(with_nan);
  CHECK(n.scale == reference::fp8(4.0f * (S * (1.0f / 6.0f))));
  CHECK(((packed64(n) >> 12) & 0xF) == 0x7);
}

TEST_CASE("nvfp4: dequantize is (e2m1 * e4m3) * (1/S) and inverts quantize within the format's precision",
          "[nvfp4]") {
  auto g = rng("nvfp4 dequant");
  for (int trial = 0; trial < 20000; ++trial) {
    float x[16];
    fill_block(block_kind::random_normal, g, x);
    const float tensor_amax = 4.0f * te_codec::block_amax(x);
    const float S = fp4fuse::nvfp4_global_encode_scale(tensor_amax);
    const te_codec q(S);
    const nvfp4_block b = q.quantize(x);
    float y[16];
    q.dequantize(b, y);
    REQUIRE(bits_of(q.global_decode_scale()) == bits_of(fp4fuse::nvfp4_global_decode_scale(S)));
    const float sf = reference::fp8_value(b.scale);
    for (int i = 0; i < 16; ++i) {
      const float code_value =
          __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>((packed64(b) >> (4 * i)) & 0xF), __NV_E2M1)));
      REQUIRE(bits_of(y[i]) == bits_of((code_value * sf) * (1.0f / S)));
      // E2M1 keeps 1 mantissa bit: |error| <= half the block's largest step (2 * sf / S / 2) plus
      // the E4M3 rounding of the scale (relative 1/16).
      REQUIRE(std::fabs(y[i] - x[i]) <= 1.0625f * sf / S + 1e-30f);
    }
  }
}

namespace {

struct nvfp4_device_result {
  std::uint64_t packed_te, packed_vllm;
  float mult_te, mult_vllm;
  std::uint32_t scales;  // te | vllm << 8
};

__global__ void quantize_blocks_kernel(const float* x, const float* S, nvfp4_device_result* out, int blocks) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = x[b * 16 + i];
  const te_codec te(S[b]);
  const vllm_codec vl(S[b]);
  const float amax = te_codec::block_amax(v);
  const fp4fuse::block_scale st = te.scale_for(amax);
  const fp4fuse::block_scale sv = vl.scale_for(amax);
  out[b] = {packed64(te.encode(v, st)), packed64(vl.encode(v, sv)), st.multiplier, sv.multiplier,
            static_cast<std::uint32_t>(st.code) | (static_cast<std::uint32_t>(sv.code) << 8)};
}

}  // namespace

TEST_CASE("nvfp4 [gpu]: device quantizers equal the host (te_exact exactly; vllm up to rcp.approx)",
          "[gpu][nvfp4]") {
  auto g = rng("nvfp4 device");
  const int blocks = 1 << 20;
  std::vector<float> x(blocks * 16), S(blocks);
  const std::vector<float> scales = test_global_scales(g);
  for (int b = 0; b < blocks; ++b) {
    float v[16];
    fill_block(static_cast<block_kind>(b % static_cast<int>(block_kind::count)), g, v);
    std::copy(v, v + 16, &x[b * 16]);
    S[b] = scales[(b / 16) % scales.size()];
  }
  float *d_x, *d_S;
  nvfp4_device_result* d_out;
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_x, x.size() * 4));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_S, S.size() * 4));
  FP4FUSE_TEST_CUDA(cudaMalloc(&d_out, blocks * sizeof(nvfp4_device_result)));
  FP4FUSE_TEST_CUDA(cudaMemcpy(d_x, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
  FP4FUSE_TEST_CUDA(cudaMemcpy(d_S, S.data(), S.size() * 4, cudaMemcpyHostToDevice));
  FP4FUSE_TEST_CUDA(cudaMemset(d_out, 0xA5, blocks * sizeof(nvfp4_device_result)));
  quantize_blocks_kernel<<<(blocks + 255) / 256, 256>>>(d_x, d_S, d_out, blocks);
  FP4FUSE_TEST_LAUNCHED();
  std::vector<nvfp4_device_result> out(blocks);
  FP4FUSE_TEST_CUDA(cudaMemcpy(out.data(), d_out, blocks * sizeof(nvfp4_device_result), cudaMemcpyDeviceToHost));
  FP4FUSE_TEST_CUDA(cudaFree(d_x));
  FP4FUSE_TEST_CUDA(cudaFree(d_S));
  FP4FUSE_TEST_CUDA(cudaFree(d_out));

  std::size_t te_bad = 0, vllm_scale_bad = 0, vllm_code_bad = 0, vllm_mult_far = 0, vllm_mult_differs = 0;
  std::int64_t worst_ulps = 0;
  for (int b = 0; b < blocks; ++b) {
    float v[16];
    std::copy(&x[b * 16], &x[b * 16] + 16, v);
    const te_codec te(S[b]);
    const nvfp4_block want_te = te.quantize(v);
    const fp4fuse::block_scale want_te_s = te.scale_for(te_codec::block_amax(v));
    if (out[b].packed_te != packed64(want_te) || (out[b].scales & 0xFF) != want_te.scale ||
        bits_of(out[b].mult_te) != bits_of(want_te_s.multiplier)) {
      if (te_bad < 5) UNSCOPED_INFO("te block " << b << " S=" << S[b]);
      ++te_bad;
    }
    const vllm_codec vl(S[b]);
    const fp4fuse::block_scale want_v = vl.scale_for(vllm_codec::block_amax(v));
    vllm_scale_bad += (out[b].scales >> 8) != want_v.code;
    const std::int64_t ulps = std::llabs(static_cast<std::int64_t>(bits_of(out[b].mult_vllm)) -
                                         static_cast<std::int64_t>(bits_of(want_v.multiplier)));
    // rcp.approx.ftz is within 1 ulp of 1/x: rcp(S) within 1, the product sf * rcp(S) (sf exact)
    // within 1.5 after its rounding, and the final rcp within 1 + 1.5: at most 3 ulps apart in all
    // (3 is seen in about one run in three of 2^20 blocks).
    if (vllm_mult_far < 5 && ulps > 3) {
      UNSCOPED_INFO("vllm multiplier: S=" << S[b] << " device " << out[b].mult_vllm << " host " << want_v.multiplier);
    }
    vllm_mult_differs += ulps != 0;
    vllm_mult_far += ulps > 3;
    worst_ulps = std::max(worst_ulps, ulps);
    // Given the device's multiplier, the host's encoder must produce the device's codes.
    vllm_code_bad += out[b].packed_vllm != packed64(vl.encode(v, {want_v.code, out[b].mult_vllm}));
  }
  INFO("vllm multipliers differing from the host's IEEE version: " << vllm_mult_differs << " of " << blocks << ", by at most "
                                                                     << worst_ulps << " ulp");
  CHECK(te_bad == 0);
  CHECK(vllm_scale_bad == 0);
  CHECK(vllm_mult_far == 0);
  CHECK(vllm_code_bad == 0);
}
