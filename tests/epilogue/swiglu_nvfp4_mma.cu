// The mma.sync fragment map, and the SwiGLU -> NVFP4 fragment epilogue against the standalone
// swiglu_quantize kernel on the same fp32 gate/up values.
#include <fp4fuse/epilogue/mma_fragment.cuh>
#include <fp4fuse/epilogue/swiglu_nvfp4_mma.cuh>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;
using frag = fp4fuse::mma_m16n8_f32_fragment;

static_assert(frag::row(0, 0) == 0 && frag::col(0, 0) == 0 && frag::col(0, 1) == 1, "T0 c0, c1");
static_assert(frag::row(5, 2) == 9 && frag::col(5, 3) == 3, "T5 c3 is row 9, col 3");
static_assert(frag::row(31, 3) == 15 && frag::col(31, 3) == 7, "T31 c3 is row 15, col 7");

TEST_CASE("mma_m16n8_f32_fragment: the 32 lanes x 4 registers cover the 16 x 8 tile exactly once", "[epilogue]") {
  int hits[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r) {
      ++hits[frag::row(lane, r)][frag::col(lane, r)];
    }
  }
  for (auto& row : hits) {
    for (int h : row) REQUIRE(h == 1);
  }
  // PTX ISA: c0/c1 of lane l are row l/4, columns 2(l%4) and 2(l%4)+1; c2/c3 the same 8 rows lower.
  for (int lane = 0; lane < 32; ++lane) {
    CHECK(frag::row(lane, 1) == lane / 4);
    CHECK(frag::row(lane, 3) == lane / 4 + 8);
    CHECK(frag::col(lane, 2) == 2 * (lane % 4));
  }
}

namespace {

constexpr int kTiles = 8;  // 64 gate/up columns = 32 output columns = 2 NVFP4 blocks per warp

/// Each warp loads a 16 x 64 gate/up tile into registers exactly as mma.sync would leave it, then
/// runs the epilogue. Columns beyond the matrix read as 0 (as a GEMM's zero-filled edge tile).
template <class Intermediate, class Activation>
__global__ void epilogue_kernel(const float* gate_up, std::int64_t rows, std::int64_t I, Activation act, const float* S,
                                fp4fuse::nvfp4_epilogue_output<fp4fuse::scale_layout_swizzled_128x4> out) {
  // Launched with 2D blocks (32 x 4): the epilogue must find its lane without assuming 1D blocks.
  const int warp = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
  const int lane = static_cast<int>(threadIdx.x);
  const std::int64_t tiles_per_row = (2 * I + 8 * kTiles - 1) / (8 * kTiles);
  const std::int64_t row0 = (warp / tiles_per_row) * 16;
  const std::int64_t gu0 = (warp % tiles_per_row) * 8 * kTiles;
  if (row0 >= rows) return;  // whole warp
  float acc[kTiles][4];
  for (int n = 0; n < kTiles; ++n) {
    for (int r = 0; r < 4; ++r) {
      const std::int64_t row = row0 + frag::row(lane, r), col = gu0 + 8 * n + frag::col(lane, r);
      acc[n][r] = row < rows && col < 2 * I ? gate_up[row * 2 * I + col] : 0.0f;
    }
  }
  const fp4fuse::nvfp4_quantizer<> q(*S);
  fp4fuse::swiglu_nvfp4_mma_epilogue<Intermediate>(acc, act, q, row0, gu0 / 2, out);
}

template <class Intermediate, class Activation>
void check_epilogue(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt) {
  using L = fp4fuse::scale_layout_swizzled_128x4;
  auto g = rng(salt);
  const std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  float hmax = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < I; ++c) {
      const float v = act.apply(gu[r * 2 * I + fp4fuse::gate_up::interleaved<8>::gate_col(c, I)],
                                gu[r * 2 * I + fp4fuse::gate_up::interleaved<8>::up_col(c, I)]);
      if (std::isfinite(v)) hmax = std::max(hmax, std::fabs(v));
    }
  const float S = fp4fuse::nvfp4_global_encode_scale(hmax);
  const L layout{rows, I / 16};
  device_buffer d_gu(gu.size() * 4), d_S(4), want_p(static_cast<std::size_t>(rows * I / 2)),
      got_p(static_cast<std::size_t>(rows * I / 2)), want_s(static_cast<std::size_t>(layout.size_bytes())),
      got_s(static_cast<std::size_t>(layout.size_bytes()));
  d_gu.upload(gu.data(), gu.size() * 4);
  d_S.upload(&S, 4);
  // The epilogue does not write scale padding: zero the tensor first, as its doc says.
  FP4FUSE_TEST_CUDA(cudaMemset(got_s.as<void>(), 0, static_cast<std::size_t>(layout.size_bytes())));
  REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<fp4fuse::format::nvfp4<>, L, fp4fuse::gate_up::interleaved<8>, Intermediate>(
      fp4fuse::swiglu_args<float>{d_gu.as<float>(), rows, I, 2 * I, want_p.as<void>(), I / 2, want_s.as<std::uint8_t>(), d_S.as<float>()},
      act)));
  const std::int64_t warps = ((rows + 15) / 16) * ((2 * I + 8 * kTiles - 1) / (8 * kTiles));
  epilogue_kernel<Intermediate><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(
      d_gu.as<float>(), rows, I, act, d_S.as<float>(),
      fp4fuse::nvfp4_epilogue_output<L>{got_p.as<std::uint8_t>(), I / 2, got_s.as<std::uint8_t>(), layout, rows, I});
  FP4FUSE_TEST_LAUNCHED();
  INFO(salt << " M=" << rows << " I=" << I);
  CHECK(got_p.download() == want_p.download());
  CHECK(got_s.download() == want_s.download());
  CHECK(got_p.guard_intact());
  CHECK(got_s.guard_intact());
}

}  // namespace

TEST_CASE("swiglu_nvfp4_mma_epilogue [gpu]: bit-identical to swiglu_quantize on the same fp32 gate/up", "[gpu][epilogue]") {
  for (std::int64_t rows : {1, 16, 37, 130}) {
    for (std::int64_t I : {16, 32, 80, 96, 2048}) {
      check_epilogue<fp4fuse::intermediate::fp32>(rows, I, fp4fuse::activation::silu{}, "epi silu");
    }
  }
  check_epilogue<fp4fuse::intermediate::bf16>(37, 96, fp4fuse::activation::silu{}, "epi bf16");
  check_epilogue<fp4fuse::intermediate::fp32>(130, 2880, fp4fuse::activation::swiglu_clamped{}, "epi gptoss");
  check_epilogue<fp4fuse::intermediate::fp32>(16, 160, fp4fuse::activation::gelu_tanh{}, "epi gelu");
}
