// The fragment adapters of the fused epilogue (mma_epilogue, wgmma_epilogue) against the standalone
// swiglu_quantize kernel on the same (biased) fp32 gate/up values, through every sink (direct,
// staged, hand-back), with and without a column bias: packed bytes and every byte of the scale
// tensor, its padding included, over outputs poisoned with non-zero bytes; the output amax against
// the exact maximum.
#include <fp4fuse/epilogue/output_amax.cuh>
#include <fp4fuse/epilogue/swiglu_quantize.cuh>
#include <fp4fuse/epilogue/wgmma_fragment.cuh>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;
using frag = fp4fuse::mma_m16n8_f32_fragment;

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

enum class sink_kind { direct, staged, hand_back };

/// The description the test kernels use: the sink kind, the optional bias (bias == nullptr: none)
/// and amax (nullptr: none), run through `run(op)`.
template <sink_kind Sink, class Intermediate, class Format, class Layout, class Activation, class Run>
__device__ void with_op(const Run& run, const fp4fuse::block_codec<Format>& codec, const fp4fuse::quantized_matrix<Format, Layout>& out,
                        const Activation& act, const float* bias, float* amax, void* staging) {
  const auto go = [&](const auto& bias_value) {
    using B = std::decay_t<decltype(bias_value)>;
    using il = fp4fuse::gate_up::interleaved<8>;
    using none = fp4fuse::output_amax::none;
    using global = fp4fuse::output_amax::global;
    if constexpr (Sink == sink_kind::hand_back) {
      run(fp4fuse::fused_epilogue<Format, fp4fuse::sink::hand_back, Activation, il, B, none, Intermediate>{codec, {}, act, {}, bias_value});
    } else {
      using S = std::conditional_t<Sink == sink_kind::staged, fp4fuse::sink::staged<Format, Layout>, fp4fuse::sink::direct<Format, Layout>>;
      S sink{out};
      if constexpr (Sink == sink_kind::staged) sink.staging = staging;
      if (amax != nullptr) {
        run(fp4fuse::fused_epilogue<Format, S, Activation, il, B, global, Intermediate>{codec, sink, act, {}, bias_value, {amax}});
      } else {
        run(fp4fuse::fused_epilogue<Format, S, Activation, il, B, none, Intermediate>{codec, sink, act, {}, bias_value});
      }
    }
  };
  if (bias != nullptr) {
    go(fp4fuse::column_bias{bias, 2 * out.cols()});
  } else {
    go(fp4fuse::no_bias{});
  }
}

/// The caller's own store of handed-back fragment blocks (tile at row0, first block column k0):
/// packed bytes inside the matrix, scale codes and the padding's 0x00, as the direct sink writes
/// them, and the amax partial combined as the direct sink does.
template <class Blocks, class Output>
__device__ void store_handed_back(const Blocks& q, int lane, std::int64_t row0, std::int64_t k0, const Output& out, float* amax) {
  using F = typename Output::format_type;
  constexpr int bs = F::block_size;
  for (int half = 0; half < 2; ++half) {
    for (int slot = 0; slot < Blocks::slots; ++slot) {
      const int b = Blocks::block_of(lane, slot);
      if (b < 0) continue;
      const std::int64_t row = row0 + Blocks::row(lane, half), k = k0 + b;
      const bool inside = row < out.rows() && k < out.layout.scale_cols;
      if (inside) memcpy(out.packed + row * out.ld_packed + k * (bs / 2), q.block[half][slot].packed, bs / 2);
      if (row < out.layout.padded_rows() && k < out.layout.padded_cols()) out.scales[out.layout.offset(row, k)] = inside ? q.block[half][slot].scale : 0;
    }
  }
  if (amax != nullptr) fp4fuse::combine_output_amax(amax, q.amax(lane, out.rows() - row0, out.layout.scale_cols - k0));
}

/// Each warp loads a 16 x 8 Tiles gate/up tile into registers exactly as mma.sync would leave it,
/// then runs the epilogue. The warps cover round_up(rows, 128) x round_up(I, 4 Tiles) output
/// elements, at least the scale tensor's padded extent: tiles beyond the matrix load zeros and
/// still call the epilogue. Tiles = 4 n8 tiles per NVFP4 block; the epilogue takes blocks four
/// at a time, so 1, 2, 4 and 6 blocks (Tiles 4, 8, 16, 24) cover partial and whole groups.
template <int kTiles, class Intermediate, class Activation, class Output = output_t, sink_kind Sink = sink_kind::direct>
__global__ void mma_epilogue_kernel(const float* gate_up, Activation act, const float* S, Output out, float* amax = nullptr,
                                    float beyond = 0.0f, const float* bias = nullptr) {
  // Launched with 2D blocks (32 x 4): the epilogue must find its lane without assuming 1D blocks.
  __shared__ alignas(16) std::uint8_t staging[4][fp4fuse::mma_staging_bytes<kTiles>];
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
  with_op<Sink, Intermediate>(
      [&](const auto& op) {
        if constexpr (Sink == sink_kind::hand_back) {
          store_handed_back(fp4fuse::mma_epilogue(op, acc, {row0, gu0}), lane, row0, gu0 / (2 * bs), out, amax);
        } else {
          fp4fuse::mma_epilogue(op, acc, {row0, gu0});
          if constexpr (Sink == sink_kind::staged) {
            fp4fuse::wait_staged_stores();
            __syncwarp();
          }
        }
      },
      codec, out, act, bias, amax, staging[threadIdx.y]);
}

constexpr int kWgmmaN = 256;  // wgmma m64n256: 256 gate/up columns = 128 output columns = 8 blocks
using wfrag = fp4fuse::wgmma_m64nN_f32_fragment<kWgmmaN>;

/// Each warpgroup (128 consecutive threads of the block's linear index, any block shape) loads a
/// 64 x 256 gate/up tile into acc[128] exactly as wgmma would leave it, then runs the epilogue.
/// The warpgroups cover round_up(rows, 128) rows and round_up(I, 64) output columns (rounded up
/// again to the 128-column tile: the epilogue must skip blocks beyond the padded scale columns).
/// Separate: gate and up loaded as two m64n128 fragments of their own (a GEMM with two B
/// operands), then interleave_gate_up.
template <class Intermediate, class Activation, class Output = output_t, bool Separate = false, sink_kind Sink = sink_kind::direct>
__global__ void wgmma_epilogue_kernel(const float* gate_up, Activation act, const float* S, Output out, float* amax = nullptr,
                                      float beyond = 0.0f, const float* bias = nullptr) {
  using F = typename Output::format_type;
  constexpr int groups_max = 2;  // warpgroups per block at most (256 threads)
  __shared__ alignas(16) std::uint8_t staging[groups_max][4 * fp4fuse::mma_staging_bytes<wfrag::registers / 4>];
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
  with_op<Sink, Intermediate>(
      [&](const auto& op) {
        if constexpr (Sink == sink_kind::hand_back) {
          const std::int64_t warp_row0 = row0 + 16 * wfrag::warp_in_warpgroup();
          store_handed_back(fp4fuse::wgmma_epilogue(op, acc, {row0, gu0}), thread % 32, warp_row0, gu0 / (2 * F::block_size), out, amax);
        } else {
          fp4fuse::wgmma_epilogue(op, acc, {row0, gu0});
          if constexpr (Sink == sink_kind::staged) {
            fp4fuse::wait_staged_stores();
            __syncwarp();
          }
        }
      },
      codec, out, act, bias, amax, staging[linear / 128]);
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
/// and with `launch(gate_up, S, out, bias)` (an epilogue kernel; `with_bias`: a random [2I] bias,
/// which the oracle sees added to the matrix), into outputs poisoned with 0xA5 by `device_buffer`;
/// requires identical packed bytes (rows of I/2 bytes with a gap that stays poisoned) and an
/// identical scale tensor, padding included.
template <class Intermediate, class Format = format_t, class Activation, class Launch>
void check_against_swiglu_quantize(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt,
                                   const Launch& launch, bool with_bias = false) {
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  constexpr int bs = Format::block_size;
  auto g = rng(salt);
  const std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  // The oracle quantizes the biased matrix (bias added on the host in fp32, as the epilogue adds it).
  const column_bias_case bias_case = make_column_bias(gu, rows, 2 * I, g, with_bias);
  const std::vector<float>& biased = bias_case.biased;
  float hmax = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < I; ++c) {
      const float v = act.apply(biased[r * 2 * I + fp4fuse::gate_up::interleaved<8>::gate_col(c, I)],
                                biased[r * 2 * I + fp4fuse::gate_up::interleaved<8>::up_col(c, I)]);
      if (std::isfinite(v)) hmax = std::max(hmax, std::fabs(v));
    }
  const float S = fp4fuse::nvfp4_global_encode_scale(hmax);
  const layout_t layout{rows, I / bs};
  INFO(salt << " M=" << rows << " I=" << I << (with_bias ? " bias" : "") << " (scale tensor " << layout.padded_rows() << " x " << layout.padded_cols() << ")");
  const std::int64_t ld_packed = (I / 2 + 15) / 16 * 16 + 16;  // 16-byte aligned rows (MXFP4 blocks, bulk copies), a poisoned gap
  const auto packed_bytes = static_cast<std::size_t>(rows * ld_packed);
  const auto scale_bytes = static_cast<std::size_t>(layout.size_bytes());
  // device_buffer poisons every byte (0xA5): nothing is zeroed before either kernel runs.
  device_buffer d_gu(gu.size() * 4), d_biased(gu.size() * 4), d_bias(bias_case.bias.size() * 4), d_S(4), want_p(packed_bytes),
      got_p(packed_bytes), want_s(scale_bytes), got_s(scale_bytes);
  d_gu.upload(gu.data(), gu.size() * 4);
  d_biased.upload(biased.data(), biased.size() * 4);
  d_bias.upload(bias_case.bias.data(), bias_case.bias.size() * 4);
  d_S.upload(&S, 4);
  const float* S_arg = fp4fuse::detail::is_nvfp4<Format> ? d_S.as<float>() : nullptr;  // MXFP4 has none
  REQUIRE(static_cast<bool>(fp4fuse::swiglu_quantize<il8, Intermediate>(
      fp4fuse::matrix_view<const float>{d_biased.as<float>(), rows, 2 * I, 2 * I},
      out_t{want_p.as<std::uint8_t>(), ld_packed, want_s.as<std::uint8_t>(), layout}, tensor_scale<Format>(S_arg), act)));
  FP4FUSE_TEST_LAUNCHED();
  launch(d_gu.as<float>(), S_arg, out_t{got_p.as<std::uint8_t>(), ld_packed, got_s.as<std::uint8_t>(), layout},
         with_bias ? d_bias.as<float>() : nullptr);
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
  check_against_swiglu_quantize<Intermediate>(rows, I, act, salt, [&](const float* gu, const float* S, const output_t& out, const float* bias) {
    const fp4fuse::quantized_matrix<format_t, offset_only_layout> wrapped{
        out.packed, out.ld_packed, out.scales, offset_only_layout{out.layout, out.layout.rows, out.layout.scale_cols}};
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * 16 + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = out.layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(gu, act, S, wrapped, nullptr, 0.0f, bias);
  });
}

template <class Intermediate, int kTiles = 8, class Activation>
void check_mma(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt) {
  INFO("mma tile: " << kTiles << " n8 tiles (" << kTiles / 4 << " NVFP4 blocks per row)");
  check_against_swiglu_quantize<Intermediate>(rows, I, act, salt, [&](const float* gu, const float* S, const output_t& out, const float* bias) {
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * 16 + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = out.layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(gu, act, S, out, nullptr, 0.0f, bias);
  });
}

template <class Intermediate, class Activation>
void check_wgmma(std::int64_t rows, std::int64_t I, const Activation& act, dim3 block, const char* salt) {
  INFO("block " << block.x << " x " << block.y << " x " << block.z);
  const unsigned groups_per_block = block.x * block.y * block.z / 128;
  REQUIRE(groups_per_block * 128 == block.x * block.y * block.z);
  check_against_swiglu_quantize<Intermediate>(rows, I, act, salt, [&](const float* gu, const float* S, const output_t& out, const float* bias) {
    const std::int64_t tiles_per_row = (out.layout.padded_cols() * 16 + kWgmmaN / 2 - 1) / (kWgmmaN / 2);
    const std::int64_t groups = out.layout.padded_rows() / 64 * tiles_per_row;
    wgmma_epilogue_kernel<Intermediate>
        <<<static_cast<unsigned>((groups + groups_per_block - 1) / groups_per_block), block>>>(gu, act, S, out, nullptr, 0.0f, bias);
  });
}

/// The mma.sync form through any sink for any format, with or without a bias.
template <class Intermediate, class Format, int kTiles, sink_kind Sink, class Activation>
void check_mma_format(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt, bool with_bias = false) {
  INFO("mma tile: " << kTiles << " n8 tiles, block " << Format::block_size << ", sink " << int(Sink));
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  check_against_swiglu_quantize<Intermediate, Format>(
      rows, I, act, salt,
      [&](const float* gu, const float* S, const out_t& out, const float* bias) {
        const std::int64_t tiles_per_row = (out.layout.padded_cols() * Format::block_size + 4 * kTiles - 1) / (4 * kTiles);
        const std::int64_t warps = out.layout.padded_rows() / 16 * tiles_per_row;
        mma_epilogue_kernel<kTiles, Intermediate, Activation, out_t, Sink>
            <<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(gu, act, S, out, nullptr, 0.0f, bias);
      },
      with_bias);
}

/// The wgmma form through any sink for any format (Separate: from two accumulators through
/// interleave_gate_up), with or without a bias; 1 or 2 warpgroups per block.
template <class Intermediate, class Format, bool Separate = false, sink_kind Sink = sink_kind::direct, class Activation>
void check_wgmma_format(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt, bool with_bias = false,
                        unsigned threads = 128) {
  INFO("wgmma, block " << Format::block_size << (Separate ? ", separate gate and up accumulators" : "") << ", sink " << int(Sink)
                       << ", threads " << threads);
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  check_against_swiglu_quantize<Intermediate, Format>(
      rows, I, act, salt,
      [&](const float* gu, const float* S, const out_t& out, const float* bias) {
        const std::int64_t tiles_per_row = (out.layout.padded_cols() * Format::block_size + kWgmmaN / 2 - 1) / (kWgmmaN / 2);
        const std::int64_t groups = out.layout.padded_rows() / 64 * tiles_per_row;
        const unsigned per_block = threads / 128;
        wgmma_epilogue_kernel<Intermediate, Activation, out_t, Separate, Sink>
            <<<static_cast<unsigned>((groups + per_block - 1) / per_block), threads>>>(gu, act, S, out, nullptr, 0.0f, bias);
      },
      with_bias);
}

/// The output amax of the mma / wgmma forms (their return value, combined by combine_output_amax)
/// against the exact maximum of |act(gate) * up| over the device's own swiglu output on the same
/// values (NaN ignored; bf16-rounded for intermediate::bf16). Accumulators past the matrix (rows
/// >= M, gate/up columns >= 2I) hold 1e4, whose activation (~1e8) beats every value inside: the
/// epilogue must leave them out. finite: without NaN/Inf inputs, so the maximum is a finite value
/// found in one lane (with them it is +Inf wherever a special row exists).
template <class Intermediate, class Format, int kTiles, bool Wgmma, class Activation, sink_kind Sink = sink_kind::direct>
void check_amax(std::int64_t rows, std::int64_t I, const Activation& act, const char* salt, bool finite) {
  using out_t = fp4fuse::quantized_matrix<Format, layout_t>;
  constexpr int bs = Format::block_size;
  auto g = rng(salt);
  std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  if (finite) {
    replace_nonfinite(gu, g, 3.0f);
  }
  const layout_t layout{rows, I / bs};
  INFO(salt << " M=" << rows << " I=" << I << (Wgmma ? " wgmma" : " mma") << " block " << bs << " sink " << int(Sink));
  const std::int64_t ld_packed = (I / 2 + 15) / 16 * 16 + 16;
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
    wgmma_epilogue_kernel<Intermediate, Activation, out_t, false, Sink><<<static_cast<unsigned>(layout.padded_rows() / 64 * tiles_per_row), 128>>>(
        d_gu.as<float>(), act, S_arg, out, d_amax.as<float>(), 1e4f);
  } else {
    const std::int64_t tiles_per_row = (layout.padded_cols() * bs + 4 * kTiles - 1) / (4 * kTiles);
    const std::int64_t warps = layout.padded_rows() / 16 * tiles_per_row;
    mma_epilogue_kernel<kTiles, Intermediate, Activation, out_t, Sink><<<static_cast<unsigned>((warps + 3) / 4), dim3(32, 4)>>>(
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

TEST_CASE("mma_epilogue [gpu]: bit-identical to swiglu_quantize, scale padding included", "[gpu][epilogue]") {
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

TEST_CASE("wgmma_epilogue [gpu]: m64n256 fragments, bit-identical to swiglu_quantize, scale padding included",
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
      check_mma_format<fp32, mx, 8, sink_kind::direct>(rows, I, fp4fuse::activation::swiglu{}, "mx mma 1 block");
      check_mma_format<bf16, mx, 24, sink_kind::direct>(rows, I, fp4fuse::activation::swiglu_clamped{}, "mx mma 3 blocks bf16");
      check_mma_format<fp32, mx_up, 16, sink_kind::direct>(rows, I, fp4fuse::activation::geglu_tanh{}, "mx round-up mma");
      check_wgmma_format<fp32, mx>(rows, I, fp4fuse::activation::swiglu{}, "mx wgmma");
      check_wgmma_format<bf16, mx>(rows, I, fp4fuse::activation::swiglu_clamped{}, "mx wgmma bf16");
      // The hand-back form, both formats: lone, partial and whole groups of NVFP4 blocks.
      check_mma_format<fp32, mx, 16, sink_kind::hand_back>(rows, I, fp4fuse::activation::swiglu{}, "mx hand-back");
      check_mma_format<fp32, format_t, 4, sink_kind::hand_back>(rows, I, fp4fuse::activation::swiglu{}, "nv hand-back 1 block");
      check_mma_format<bf16, format_t, 12, sink_kind::hand_back>(rows, I, fp4fuse::activation::swiglu_clamped{}, "nv hand-back 3 blocks");
      check_mma_format<fp32, format_t, 20, sink_kind::hand_back>(rows, I, fp4fuse::activation::swiglu{}, "nv hand-back 5 blocks");
    }
  }
}

TEST_CASE("wgmma_epilogue [gpu]: separate gate and up accumulators (interleave_gate_up), bit-identical to swiglu_quantize",
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

TEST_CASE("fragment epilogues [gpu]: the output amax of the direct sink equals the exact maximum", "[gpu][epilogue]") {
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

TEST_CASE("fragment epilogues [gpu]: the column bias, bit-identical to swiglu_quantize on the biased values", "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 130}) {
    for (std::int64_t I : {16, 80, 96, 1040}) {
      check_mma_format<fp32, format_t, 8, sink_kind::direct>(rows, I, fp4fuse::activation::swiglu{}, "bias mma", true);
      check_mma_format<bf16, format_t, 20, sink_kind::direct>(rows, I, fp4fuse::activation::swiglu_clamped{}, "bias mma 5 blocks", true);
      check_mma_format<fp32, format_t, 12, sink_kind::hand_back>(rows, I, fp4fuse::activation::swiglu{}, "bias mma hand-back", true);
      check_wgmma_format<fp32, format_t>(rows, I, fp4fuse::activation::swiglu_clamped{}, "bias wgmma", true);
      check_wgmma_format<fp32, format_t, false, sink_kind::staged>(rows, I, fp4fuse::activation::swiglu{}, "bias wgmma staged", true);
    }
    for (std::int64_t I : {32, 96, 1056}) {
      check_mma_format<fp32, mx, 16, sink_kind::direct>(rows, I, fp4fuse::activation::swiglu_clamped{}, "bias mx mma", true);
      check_wgmma_format<bf16, mx>(rows, I, fp4fuse::activation::swiglu{}, "bias mx wgmma", true);
    }
  }
}

TEST_CASE("fragment epilogues [gpu]: the staged sink (shared memory + cp.async.bulk) and the wgmma hand-back, bit-identical",
          "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 130}) {
    // 16, 80, 1040: an odd number of NVFP4 blocks inside the last tile (the 8-byte tail stored directly).
    for (std::int64_t I : {16, 80, 96, 1040, 2048}) {
      check_mma_format<fp32, format_t, 8, sink_kind::staged>(rows, I, fp4fuse::activation::swiglu{}, "staged mma");
      check_mma_format<bf16, format_t, 24, sink_kind::staged>(rows, I, fp4fuse::activation::swiglu_clamped{}, "staged mma 6 blocks");
      check_wgmma_format<fp32, format_t, false, sink_kind::staged>(rows, I, fp4fuse::activation::swiglu{}, "staged wgmma", false, 256);
      check_wgmma_format<fp32, format_t, false, sink_kind::hand_back>(rows, I, fp4fuse::activation::geglu_tanh{}, "hand-back wgmma");
    }
    for (std::int64_t I : {32, 96, 1056}) {
      check_mma_format<fp32, mx, 8, sink_kind::staged>(rows, I, fp4fuse::activation::swiglu{}, "staged mx mma");
      check_wgmma_format<fp32, mx, true, sink_kind::staged>(rows, I, fp4fuse::activation::swiglu{}, "staged mx wgmma separate");
      check_wgmma_format<bf16, mx, false, sink_kind::hand_back>(rows, I, fp4fuse::activation::swiglu_clamped{}, "hand-back mx wgmma");
    }
  }
}

TEST_CASE("fragment epilogues [gpu]: the output amax of the staged and hand-back sinks equals the exact maximum", "[gpu][epilogue]") {
  using fp4fuse::intermediate::fp32;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 300}) {
    for (std::int64_t I : {32, 96, 1056}) {
      for (bool finite : {true, false}) {
        check_amax<fp32, format_t, 8, false, fp4fuse::activation::swiglu, sink_kind::hand_back>(rows, I, {}, "amax mma hand-back", finite);
        check_amax<fp32, mx, 16, false, fp4fuse::activation::swiglu, sink_kind::hand_back>(rows, I, {}, "amax mma hand-back mx", finite);
        check_amax<fp32, format_t, 8, false, fp4fuse::activation::swiglu, sink_kind::staged>(rows, I, {}, "amax mma staged", finite);
        check_amax<fp32, format_t, 0, true, fp4fuse::activation::swiglu, sink_kind::hand_back>(rows, I, {}, "amax wgmma hand-back", finite);
        check_amax<fp32, format_t, 0, true, fp4fuse::activation::swiglu, sink_kind::staged>(rows, I, {}, "amax wgmma staged", finite);
      }
    }
  }
}
