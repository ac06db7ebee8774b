// The mma.sync fragment map, and the SwiGLU -> NVFP4 fragment epilogues (mma.sync and wgmma forms)
// against the standalone swiglu_quantize kernel on the same fp32 gate/up values: packed bytes and
// every byte of the scale tensor, its padding included, over outputs poisoned with non-zero bytes.
#include <fp4fuse/epilogue/mma_fragment.cuh>
#include <fp4fuse/epilogue/output_amax.cuh>
#include <fp4fuse/epilogue/swiglu_quantize.cuh>
#include <fp4fuse/epilogue/wgmma_fragment.cuh>

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

using layout_t = fp4fuse::scale_layout::swizzled_128x4;
using format_t = fp4fuse::format::nvfp4<>;
using output_t = fp4fuse::quantized_matrix<format_t, layout_t>;
using il8 = fp4fuse::gate_up::interleaved<8>;

static_assert(poison != 0, "the outputs start non-zero, so zero scale padding must have been written");

/// The fp32 gate/up value at (row, col) of the [rows, 2I] matrix, or 0 beyond it (as a GEMM's
/// zero-filled edge tile leaves its accumulators).
/// `beyond` instead of 0: accumulators past the matrix that hold anything (the amax must skip them).
__device__ float load_or_zero(const float* gate_up, std::int64_t rows, std::int64_t I, std::int64_t row, std::int64_t col,
                              float beyond = 0.0f) {
  return row < rows && col < 2 * I ? gate_up[row * 2 * I + col] : beyond;
}

/// Each warp loads a 16 x 8 Tiles gate/up tile into registers exactly as mma.sync would leave it,
/// then runs the epilogue. The warps cover round_up(rows, 128) x round_up(I, 4 Tiles) output
/// elements, at least the scale tensor's padded extent: tiles beyond the matrix load zeros and
/// still call the epilogue. Tiles = 4 n8 tiles per NVFP4 block; the epilogue takes blocks four
/// at a time, so 1, 2, 4 and 6 blocks (Tiles 4, 8, 16, 24) cover partial and whole groups.
template <int kTiles, class Intermediate, class Activation, class Output = output_t, bool HandBack = false>
__global__ void mma_epilogue_kernel(const float* gate_up, Activation act, const float* S, Output out, float* amax = nullptr,
                                    float beyond = 0.0f) {
  // Launched with 2D blocks (32 x 4): the epilogue must find its lane without assuming 1D blocks.
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const int lane = static_cast<int>(threadIdx.x);
  using F = typename Output::format_type;
  constexpr int bs = F::block_size;
  const std::int64_t tiles_per_row = (out.layout.padded_cols() * bs + 4 * kTiles - 1) / (4 * kTiles);
  const std::int64_t row0 = (warp / tiles_per_row) * 16;
  const std::int64_t gu0 = (warp % tiles_per_row) * 8 * kTiles;
  if (row0 >= out.layout.padded_rows()) return;  // whole warp
  float acc[kTiles][4];
  for (int n = 0; n < kTiles; ++n) {
    for (int r = 0; r < 4; ++r) {
      acc[n][r] = load_or_zero(gate_up, out.rows(), out.cols(), row0 + frag::row(lane, r), gu0 + 8 * n + frag::col(lane, r), beyond);
    }
  }
  const auto codec = fp4fuse::make_block_codec<F>(S != nullptr ? *S : 1.0f);
  if constexpr (HandBack) {
    // The caller's own store of the handed-back blocks: packed bytes inside the matrix, scale codes
    // and the padding's 0x00, as the direct form writes them.
    using B = fp4fuse::mma_quantized_blocks<F, kTiles>;
    const B q = fp4fuse::swiglu_quantize_mma_blocks<il8, Intermediate>(acc, act, codec);
    for (int half = 0; half < 2; ++half) {
      for (int slot = 0; slot < B::slots; ++slot) {
        const int b = B::block_of(lane, slot);
        if (b < 0) continue;
        const std::int64_t row = row0 + B::row(lane, half), k = gu0 / (2 * bs) + b;
        const bool inside = row < out.rows() && k < out.layout.scale_cols;
        if (inside) memcpy(out.packed + row * out.ld_packed + k * (bs / 2), q.block[half][slot].packed, bs / 2);
        if (row < out.layout.padded_rows() && k < out.layout.padded_cols()) out.scales[out.layout.offset(row, k)] = inside ? q.block[half][slot].scale : 0;
      }
    }
  } else {
    const float lane_amax = fp4fuse::swiglu_quantize_mma_epilogue<il8, Intermediate>(acc, {row0, gu0}, act, codec, out);
    if (amax != nullptr) fp4fuse::combine_output_amax(amax, lane_amax);  // the whole warp is here
  }
}

constexpr int kWgmmaN = 256;  // wgmma m64n256: 256 gate/up columns = 128 output columns = 8 blocks
using wfrag = fp4fuse::wgmma_m64nN_f32_fragment<kWgmmaN>;

/// Each warpgroup (128 consecutive threads of the block's linear index, any block shape) loads a
/// 64 x 256 gate/up tile into acc[128] exactly as wgmma would leave it, then runs the epilogue.
/// The warpgroups cover round_up(rows, 128) rows and round_up(I, 64) output columns (rounded up
/// again to the 128-column tile: the epilogue must skip blocks beyond the padded scale columns).
/// Separate: gate and up loaded as two m64n128 fragments of their own (a GEMM with two B
/// operands), then interleave_gate_up.
template <class Intermediate, class Activation, class Output = output_t, bool Separate = false>
__global__ void wgmma_epilogue_kernel(const float* gate_up, Activation act, const float* S, Output out, float* amax = nullptr,
                                      float beyond = 0.0f) {
  using F = typename Output::format_type;
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned groups_per_block = blockDim.x * blockDim.y * blockDim.z / 128;
  const std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * groups_per_block + linear / 128;
  const int thread = static_cast<int>(linear % 128);
  const std::int64_t tiles_per_row = (out.layout.padded_cols() * F::block_size + kWgmmaN / 2 - 1) / (kWgmmaN / 2);
  const std::int64_t row0 = (group / tiles_per_row) * 64;
  const std::int64_t gu0 = (group % tiles_per_row) * kWgmmaN;
  if (row0 >= out.layout.padded_rows()) return;  // whole warpgroup
  float acc[wfrag::registers];
  if constexpr (Separate) {
    using half = fp4fuse::wgmma_m64nN_f32_fragment<kWgmmaN / 2>;  // each: 128 output columns
    float gate[half::registers], up[half::registers];
#pragma unroll
    for (int i = 0; i < half::registers; ++i) {
      const std::int64_t row = row0 + half::row(thread, i), c = gu0 / 2 + half::col(thread, i);  // output column
      gate[i] = c < out.cols() ? load_or_zero(gate_up, out.rows(), out.cols(), row, il8::gate_col(c, out.cols())) : 0.0f;
      up[i] = c < out.cols() ? load_or_zero(gate_up, out.rows(), out.cols(), row, il8::up_col(c, out.cols())) : 0.0f;
    }
    fp4fuse::interleave_gate_up(gate, up, acc);
  } else {
#pragma unroll
    for (int i = 0; i < wfrag::registers; ++i) {
      acc[i] = load_or_zero(gate_up, out.rows(), out.cols(), row0 + wfrag::row(thread, i), gu0 + wfrag::col(thread, i), beyond);
    }
  }
  const auto codec = fp4fuse::make_block_codec<F>(S != nullptr ? *S : 1.0f);
  const float lane_amax = fp4fuse::swiglu_quantize_wgmma_epilogue<il8, Intermediate>(acc, {row0, gu0}, act, codec, out);
  if (amax != nullptr) fp4fuse::combine_output_amax(amax, lane_amax);  // the whole warpgroup is here
}

/// Counts differing bytes and reports the first few.
std::size_t differences(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, const char* what) {
  if (got.size() != want.size()) return got.size() + want.size();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad < 5) {
      UNSCOPED_INFO(what << " byte " << i << ": got 0x" << std::hex << int(got[i]) << " want 0x" << int(want[i]) << std::dec);
    }
    ++bad;
  }
  return bad;
}

/// Quantizes the same random [rows, 2I] gate/up matrix (interleaved by 8) with `swiglu_quantize`
/// and with `launch(gate_up, S, out)` (an epilogue kernel), into outputs poisoned with 0xA5 by
/// `device_buffer`; requires identical packed bytes (rows of I/2 bytes with an 8-byte gap that
/// stays poisoned) and an identical scale tensor, padding included.
template <class Intermediate, class Format = format_t, class Activation, class Launch>
void check_against_swiglu_quantize(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt,
                                   const Launch& launch) {
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  constexpr int bs = Format::block_size;
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
  const layout_t layout{rows, I / bs};
  INFO(salt << " M=" << rows << " I=" << I << " (scale tensor " << layout.padded_rows() << " x " << layout.padded_cols() << ")");
  const std::int64_t ld_packed = I / 2 + 16;  // 16-byte aligned rows (MXFP4 blocks), a poisoned gap
  const auto packed_bytes = static_cast<std::size_t>(rows * ld_packed);
  const auto scale_bytes = static_cast<std::size_t>(layout.size_bytes());
  // device_buffer poisons every byte (0xA5): nothing is zeroed before either kernel runs.
  device_buffer d_gu(gu.size() * 4), d_S(4), want_p(packed_bytes), got_p(packed_bytes), want_s(scale_bytes),
      got_s(scale_bytes);
  d_gu.upload(gu.data(), gu.size() * 4);
  d_S.upload(&S, 4);
  const float* S_arg = fp4fuse::detail::is_nvfp4<Format> ? d_S.as<float>() : nullptr;  // MXFP4 has none
  REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<il8, Intermediate>(
      fp4fuse::matrix_view<const float>{d_gu.as<float>(), rows, 2 * I, 2 * I}, out_t{want_p.as<std::uint8_t>(), ld_packed, want_s.as<std::uint8_t>(), layout},
      tensor_scale<Format>(S_arg), act)));
  FP4FUSE_TEST_LAUNCHED();
  launch(d_gu.as<float>(), S_arg, out_t{got_p.as<std::uint8_t>(), ld_packed, got_s.as<std::uint8_t>(), layout});
  FP4FUSE_TEST_LAUNCHED();
  const std::vector<unsigned char> want_scales = want_s.download();
  // The oracle: swiglu_quantize writes the padding as 0x00 over the poison.
  std::size_t padding = 0, padding_not_zero = 0;
  for (std::int64_t r = 0; r < layout.padded_rows(); ++r) {
    for (std::int64_t k = 0; k < layout.padded_cols(); ++k) {
      if (!layout.is_padding(r, k)) continue;
      ++padding;
      if (want_scales[static_cast<std::size_t>(layout.offset(r, k))] != 0) ++padding_not_zero;
    }
  }
  REQUIRE(padding_not_zero == 0);
  CHECK(padding == scale_bytes - static_cast<std::size_t>(rows * (I / bs)));
  CHECK(differences(got_p.download(), want_p.download(), "packed") == 0);
  CHECK(differences(got_s.download(), want_scales, "scales") == 0);
  CHECK(got_p.guard_intact());
  CHECK(got_s.guard_intact());
}

/// The swizzled layout seen through `offset` alone, as a user's own layout might be: the epilogue
/// must fall back to `offset(row, col)` per block.
struct offset_only_layout {
  layout_t inner;
  std::int64_t rows, scale_cols;  // the layout interface's shape
  __host__ __device__ std::int64_t padded_rows() const { return inner.padded_rows(); }
  __host__ __device__ std::int64_t padded_cols() const { return inner.padded_cols(); }
  __host__ __device__ std::int64_t offset(std::int64_t row, std::int64_t col) const { return inner.offset(row, col); }
};
static_assert(fp4fuse::detail::has_split_offset<fp4fuse::scale_layout::swizzled_128x4>, "split offsets used");
static_assert(fp4fuse::detail::has_split_offset<fp4fuse::scale_layout::linear>, "split offsets used");
static_assert(!fp4fuse::detail::has_split_offset<offset_only_layout>, "offset() fallback used");

template <class Intermediate, int kTiles, class Activation>
void check_mma_offset_only(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt) {
  INFO("layout with offset() only, mma tile: " << kTiles << " n8 tiles");
  check_against_swiglu_quantize<Intermediate>(rows, I, act, salt, [&](const float* gu, const float* S, const output_t& out) {
    const fp4fuse::quantized_matrix<format_t, offset_only_layout> wrapped{
        out.packed, out.ld_packed, out.scales, offset_only_layout{out.layout, out.layout.rows, out.layout.scale_cols}};
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * 16 + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = out.layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(gu, act, S, wrapped);
  });
}

template <class Intermediate, int kTiles = 8, class Activation>
void check_mma(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt) {
  INFO("mma tile: " << kTiles << " n8 tiles (" << kTiles / 4 << " NVFP4 blocks per row)");
  check_against_swiglu_quantize<Intermediate>(rows, I, act, salt, [&](const float* gu, const float* S, const output_t& out) {
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * 16 + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = out.layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(gu, act, S, out);
  });
}

template <class Intermediate, class Activation>
void check_wgmma(std::int64_t rows, std::int64_t I, const Activation& act, dim3 block, const char* salt) {
  INFO("block " << block.x << " x " << block.y << " x " << block.z);
  const unsigned groups_per_block = block.x * block.y * block.z / 128;
  REQUIRE(groups_per_block * 128 == block.x * block.y * block.z);
  check_against_swiglu_quantize<Intermediate>(rows, I, act, salt, [&](const float* gu, const float* S, const output_t& out) {
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * 16 + kWgmmaN / 2 - 1) / (kWgmmaN / 2);
    const std::int64_t groups = out.layout.padded_rows() / 64 * tiles_per_row;
    wgmma_epilogue_kernel<Intermediate>
        <<<static_cast<unsigned>((groups + groups_per_block - 1) / groups_per_block), block>>>(gu, act, S, out);
  });
}

/// The mma.sync form (direct or hand-back) for any format.
template <class Intermediate, class Format, int kTiles, bool HandBack, class Activation>
void check_mma_format(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt) {
  INFO("mma tile: " << kTiles << " n8 tiles, block " << Format::block_size << (HandBack ? ", hand-back" : ", direct"));
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  check_against_swiglu_quantize<Intermediate, Format>(rows, I, act, salt, [&](const float* gu, const float* S, const out_t& out) {
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * Format::block_size + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = out.layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate, Activation, out_t, HandBack><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(gu, act, S, out);
  });
}

/// The wgmma form for any format (Separate: from two accumulators through interleave_gate_up).
template <class Intermediate, class Format, bool Separate = false, class Activation>
void check_wgmma_format(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt) {
  INFO("wgmma, block " << Format::block_size << (Separate ? ", separate gate and up accumulators" : ""));
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  check_against_swiglu_quantize<Intermediate, Format>(rows, I, act, salt, [&](const float* gu, const float* S, const out_t& out) {
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * Format::block_size + kWgmmaN / 2 - 1) / (kWgmmaN / 2);
    const std::int64_t groups = out.layout.padded_rows() / 64 * tiles_per_row;
    wgmma_epilogue_kernel<Intermediate, Activation, out_t, Separate><<<static_cast<unsigned>(groups), 128>>>(gu, act, S, out);
  });
}

/// The output amax of the mma / wgmma forms (their return value, combined by combine_output_amax)
/// against the exact maximum of |act(gate) * up| over the device's own swiglu output on the same
/// values (NaN ignored; bf16-rounded for intermediate::bf16). Accumulators past the matrix (rows
/// >= M, gate/up columns >= 2I) hold 1e4, whose activation (~1e8) beats every value inside: the
/// epilogue must leave them out. finite: without NaN/Inf inputs, so the maximum is a finite value
/// found in one lane (with them it is +Inf wherever a special row exists).
template <class Intermediate, class Format, int kTiles, bool Wgmma, class Activation>
void check_amax(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt, bool finite) {
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  constexpr int bs = Format::block_size;
  auto g = rng(salt);
  std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  if (finite) {
    replace_nonfinite(gu, g, 3.0f);
  }
  const layout_t layout{rows, I / bs};
  INFO(salt << " M=" << rows << " I=" << I << (Wgmma ? " wgmma" : " mma") << " block " << bs);
  const std::int64_t ld_packed = I / 2 + 16;
  device_buffer d_gu(gu.size() * 4), d_h(static_cast<std::size_t>(rows * I) * 4), d_S(4), d_p(static_cast<std::size_t>(rows * ld_packed)),
      d_s(static_cast<std::size_t>(layout.size_bytes())), d_amax(4);
  d_gu.upload(gu.data(), gu.size() * 4);
  REQUIRE(static_cast<bool>(fp4fuse::gated_activation<il8>(fp4fuse::matrix_view<const float>{d_gu.as<float>(), rows, 2 * I, 2 * I}, fp4fuse::matrix_view<float>{d_h.as<float>(), rows, I, I},
                                                 fp4fuse::global_scale::none{}, act)));
  FP4FUSE_TEST_LAUNCHED();
  std::vector<float> h(static_cast<std::size_t>(rows * I));
  {
    const auto raw = d_h.download();
    std::memcpy(h.data(), raw.data(), raw.size());
  }
  float want = 0.0f;
  for (float v : h) {
    if constexpr (std::is_same_v<Intermediate, fp4fuse::intermediate::bf16>) v = __bfloat162float(__float2bfloat16_rn(v));
    if (!std::isnan(v)) want = std::max(want, std::fabs(v));
  }
  if (finite) REQUIRE(std::isfinite(want));
  const float S = fp4fuse::nvfp4_global_encode_scale(std::isfinite(want) ? want : 448.0f * 6.0f);
  d_S.upload(&S, 4);
  const float zero = 0.0f;
  d_amax.upload(&zero, 4);
  const float* S_arg = fp4fuse::detail::is_nvfp4<Format> ? d_S.as<float>() : nullptr;
  const out_t out{d_p.as<std::uint8_t>(), ld_packed, d_s.as<std::uint8_t>(), layout};
  if constexpr (Wgmma) {
    const std::int64_t tiles_per_row = (layout.padded_cols() * bs + kWgmmaN / 2 - 1) / (kWgmmaN / 2);
    wgmma_epilogue_kernel<Intermediate, Activation, out_t><<<static_cast<unsigned>(layout.padded_rows() / 64 * tiles_per_row), 128>>>(
        d_gu.as<float>(), act, S_arg, out, d_amax.as<float>(), 1e4f);
  } else {
    const std::int64_t tiles_per_row = (layout.padded_cols() * bs + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate, Activation, out_t><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(
        d_gu.as<float>(), act, S_arg, out, d_amax.as<float>(), 1e4f);
  }
  FP4FUSE_TEST_LAUNCHED();
  float got;
  {
    const auto raw = d_amax.download();
    std::memcpy(&got, raw.data(), 4);
  }
  INFO("amax got " << got << " want " << want);
  CHECK(bits_of(got) == bits_of(want));
}

}  // namespace

TEST_CASE("swiglu_quantize_mma_epilogue [gpu]: bit-identical to swiglu_quantize, scale padding included", "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  for (std::int64_t rows : {1, 16, 37, 130}) {
    for (std::int64_t I : {16, 32, 80, 96, 1040, 2048}) {
      check_mma<fp32>(rows, I, fp4fuse::activation::swiglu{}, "epi swiglu");
    }
  }
  check_mma<bf16>(37, 96, fp4fuse::activation::swiglu{}, "epi bf16");
  check_mma<bf16>(130, 1040, fp4fuse::activation::swiglu{}, "epi bf16");
  check_mma<fp32>(130, 2880, fp4fuse::activation::swiglu_clamped{}, "epi gptoss");
  check_mma<fp32>(65, 80, fp4fuse::activation::swiglu_clamped{}, "epi gptoss");
  check_mma<fp32>(16, 160, fp4fuse::activation::geglu_tanh{}, "epi gelu");
  // 1, 3, 4, 5 and 6 blocks per warp tile: a lone block, a group without its fourth block, one
  // whole group, a group and a lone block, a group and a half.
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {16, 80, 96, 1040}) {
      check_mma<fp32, 4>(rows, I, fp4fuse::activation::swiglu{}, "epi 1 block");
      check_mma<fp32, 12>(rows, I, fp4fuse::activation::swiglu{}, "epi 3 blocks");
      check_mma<fp32, 16>(rows, I, fp4fuse::activation::swiglu_clamped{}, "epi 4 blocks");
      check_mma<fp32, 20>(rows, I, fp4fuse::activation::swiglu_clamped{}, "epi 5 blocks");
      check_mma<bf16, 24>(rows, I, fp4fuse::activation::swiglu{}, "epi 6 blocks");
    }
  }
  check_mma_offset_only<fp32, 8>(130, 1040, fp4fuse::activation::swiglu{}, "epi offset only");
  check_mma_offset_only<fp32, 4>(37, 80, fp4fuse::activation::swiglu{}, "epi offset only");
}

TEST_CASE("swiglu_quantize_wgmma_epilogue [gpu]: m64n256 fragments, bit-identical to swiglu_quantize, scale padding included",
          "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  // One and two warpgroups per block, and a 2D block whose warpgroups span threadIdx.y.
  for (const dim3 block : {dim3(128), dim3(256), dim3(64, 4)}) {
    for (std::int64_t rows : {1, 64, 65, 130}) {
      for (std::int64_t I : {16, 80, 128, 1040}) {
        check_wgmma<fp32>(rows, I, fp4fuse::activation::swiglu{}, block, "wgmma silu");
        check_wgmma<bf16>(rows, I, fp4fuse::activation::swiglu{}, block, "wgmma silu bf16");
        check_wgmma<fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, block, "wgmma gptoss");
        check_wgmma<bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, block, "wgmma gptoss bf16");
      }
    }
  }
}

TEST_CASE("fragment epilogues [gpu]: MXFP4 (quad all-reduce of 32-blocks) and the hand-back form, bit-identical to swiglu_quantize",
          "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using mx = fp4fuse::format::mxfp4<>;
  using mx_up = fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>;
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {32, 96, 160, 1056}) {
      check_mma_format<fp32, mx, 8, false>(rows, I, fp4fuse::activation::swiglu{}, "mx mma 1 block");
      check_mma_format<bf16, mx, 24, false>(rows, I, fp4fuse::activation::swiglu_clamped{}, "mx mma 3 blocks bf16");
      check_mma_format<fp32, mx_up, 16, false>(rows, I, fp4fuse::activation::geglu_tanh{}, "mx round-up mma");
      check_wgmma_format<fp32, mx>(rows, I, fp4fuse::activation::swiglu{}, "mx wgmma");
      check_wgmma_format<bf16, mx>(rows, I, fp4fuse::activation::swiglu_clamped{}, "mx wgmma bf16");
      // The hand-back form, both formats: lone, partial and whole groups of NVFP4 blocks.
      check_mma_format<fp32, mx, 16, true>(rows, I, fp4fuse::activation::swiglu{}, "mx hand-back");
      check_mma_format<fp32, format_t, 4, true>(rows, I, fp4fuse::activation::swiglu{}, "nv hand-back 1 block");
      check_mma_format<bf16, format_t, 12, true>(rows, I, fp4fuse::activation::swiglu_clamped{}, "nv hand-back 3 blocks");
      check_mma_format<fp32, format_t, 20, true>(rows, I, fp4fuse::activation::swiglu{}, "nv hand-back 5 blocks");
    }
  }
}

TEST_CASE("swiglu_quantize_wgmma_epilogue [gpu]: separate gate and up accumulators (interleave_gate_up), bit-identical to swiglu_quantize",
          "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {32, 96, 160, 1056}) {
      check_wgmma_format<fp32, format_t, true>(rows, I, fp4fuse::activation::swiglu{}, "nv wgmma separate");
      check_wgmma_format<bf16, mx, true>(rows, I, fp4fuse::activation::swiglu_clamped{}, "mx wgmma separate bf16");
    }
  }
}

TEST_CASE("fragment epilogues [gpu]: the returned output amax equals the exact maximum", "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 130, 300}) {
    for (std::int64_t I : {32, 96, 160, 1056}) {
      for (bool finite : {true, false}) {
        check_amax<fp32, format_t, 8, false>(rows, I, fp4fuse::activation::swiglu{}, "amax mma", finite);
        check_amax<bf16, format_t, 20, false>(rows, I, fp4fuse::activation::swiglu{}, "amax mma 5 blocks bf16", finite);
        check_amax<fp32, mx, 16, false>(rows, I, fp4fuse::activation::geglu_tanh{}, "amax mma mx", finite);
        check_amax<fp32, format_t, 0, true>(rows, I, fp4fuse::activation::swiglu{}, "amax wgmma", finite);
        check_amax<bf16, mx, 0, true>(rows, I, fp4fuse::activation::geglu_tanh{}, "amax wgmma mx bf16", finite);
        // swiglu_clamped bounds every value (the 1e4 past the matrix too): the plain maximum.
        check_amax<fp32, format_t, 0, true>(rows, I, fp4fuse::activation::swiglu_clamped{}, "amax wgmma clamped", finite);
      }
    }
  }
}
