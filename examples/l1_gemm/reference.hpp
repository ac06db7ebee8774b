#pragma once
// Host side of the L1 example and its tests: data, the float64 reference of GEMM + SwiGLU +
// NVFP4, the comparison of a flow's output against it, and the fragment epilogue on the host
// through the library's host twin (what runs when there is no GPU).
#include <cuda_bf16.h>

#include <fp4fuse/fp4fuse.cuh>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace l1_gemm::host {

using fmt = fp4fuse::format::nvfp4<>;
using scale_layout = fp4fuse::scale_layout::swizzled_128x4;
using interleave = fp4fuse::gate_up::interleaved<8>;

/// X [T, H] uniform in [-1, 1); W [2I, H] uniform in [-1, 1) / sqrt(H), as bf16, from `seed`.
struct inputs {
  int T, H, I;
  std::vector<__nv_bfloat16> x, w;
  inputs(int T_, int H_, int I_, std::uint64_t seed) : T(T_), H(H_), I(I_) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const float ws = 1.0f / std::sqrt(static_cast<float>(H));
    x.resize(static_cast<std::size_t>(T) * H);
    w.resize(static_cast<std::size_t>(2 * I) * H);
    for (auto& v : x) v = __float2bfloat16_rn(u(g));
    for (auto& v : w) v = __float2bfloat16_rn(u(g) * ws);
  }
};

/// The float64 GEMM row `row`: 2I gate/up values (interleaved, as the GEMM writes them).
inline std::vector<double> gate_up_row(const inputs& in, int row) {
  std::vector<double> d(static_cast<std::size_t>(2 * in.I));
  const __nv_bfloat16* xr = &in.x[static_cast<std::size_t>(row) * in.H];
  for (int n = 0; n < 2 * in.I; ++n) {
    const __nv_bfloat16* wr = &in.w[static_cast<std::size_t>(n) * in.H];
    double s = 0;
    for (int k = 0; k < in.H; ++k) s += double(__bfloat162float(xr[k])) * double(__bfloat162float(wr[k]));
    d[static_cast<std::size_t>(n)] = s;
  }
  return d;
}

/// act(gate) * up of a float64 gate/up row: gate and up rounded once to float, the activation
/// evaluated as the library does (the unquantized reference of the fused output).
template <class Activation>
std::vector<float> swiglu_row(const std::vector<double>& gu, int I, const Activation& act) {
  std::vector<float> h(static_cast<std::size_t>(I));
  for (int c = 0; c < I; ++c) {
    h[static_cast<std::size_t>(c)] = act.apply(static_cast<float>(gu[static_cast<std::size_t>(interleave::gate_col(c, I))]),
                                               static_cast<float>(gu[static_cast<std::size_t>(interleave::up_col(c, I))]));
  }
  return h;
}

/// One row quantized with the library's host codec: I/2 packed bytes and I/16 scale codes.
struct quantized_row {
  std::vector<std::uint8_t> packed, scales;
};
inline quantized_row quantize_row(const std::vector<float>& h, float S) {
  const std::size_t I = h.size();
  quantized_row q{std::vector<std::uint8_t>(I / 2), std::vector<std::uint8_t>(I / 16)};
  const fp4fuse::block_codec<fmt> codec(S);
  for (std::size_t b = 0; b < I / 16; ++b) {
    float blk[16];
    std::memcpy(blk, &h[16 * b], sizeof blk);
    const fp4fuse::quantized_block<fmt> block = codec.quantize(blk);
    q.scales[b] = block.scale;
    std::memcpy(&q.packed[8 * b], block.packed, 8);
  }
  return q;
}

/// Dequantized value of element c of a row given its packed bytes and scale codes.
inline float dequantized(const std::uint8_t* packed, const std::uint8_t* scales_of_row, int c, float S) {
  fp4fuse::quantized_block<fmt> block{};
  std::memcpy(block.packed, packed + (c / 16) * 8, 8);
  block.scale = scales_of_row[c / 16];
  float y[16];
  fp4fuse::block_codec<fmt>(S).dequantize(block, y);
  return y[c % 16];
}

/// How a flow's NVFP4 output compares with the float64 reference over the checked rows.
struct comparison {
  std::int64_t codes = 0, code_diffs = 0;  ///< E2M1 codes + scale codes compared, and differing
  double err2 = 0, ref2 = 0;               ///< sum of squared dequantization errors and of squared references
  double ref_err2 = 0;                     ///< the same for the reference's own quantization
  double rel_rms() const { return ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0; }
  double reference_rel_rms() const { return ref2 > 0 ? std::sqrt(ref_err2 / ref2) : 0.0; }
  double diff_fraction() const { return codes > 0 ? double(code_diffs) / double(codes) : 0.0; }
};

/// Adds row `row` of a device result (packed [T, I/2] and the full swizzled scale tensor, copied to
/// the host) to `cmp`, against the unquantized reference `h` and its host quantization.
inline void compare_row(comparison& cmp, const std::vector<std::uint8_t>& packed, const std::vector<std::uint8_t>& scales,
                        int T, int I, int row, const std::vector<float>& h, float S) {
  const scale_layout layout{T, I / 16};
  const quantized_row want = quantize_row(h, S);
  std::vector<std::uint8_t> row_scales(static_cast<std::size_t>(I / 16));
  for (int b = 0; b < I / 16; ++b) {
    row_scales[static_cast<std::size_t>(b)] = scales[static_cast<std::size_t>(layout.offset(row, b))];
    cmp.codes += 1;
    cmp.code_diffs += row_scales[static_cast<std::size_t>(b)] != want.scales[static_cast<std::size_t>(b)];
  }
  const std::uint8_t* got = &packed[static_cast<std::size_t>(row) * (I / 2)];
  for (int c = 0; c < I; ++c) {
    const int shift = 4 * (c % 2);
    cmp.codes += 1;
    cmp.code_diffs += ((got[c / 2] >> shift) & 0xF) != ((want.packed[static_cast<std::size_t>(c / 2)] >> shift) & 0xF);
    const double ref = h[static_cast<std::size_t>(c)];
    const double e = dequantized(got, row_scales.data(), c, S) - ref;
    const double re = dequantized(want.packed.data(), want.scales.data(), c, S) - ref;
    cmp.err2 += e * e;
    cmp.ref_err2 += re * re;
    cmp.ref2 += ref * ref;
  }
}

/// True when every padding byte of a swizzled scale tensor (copied to the host) is 0x00.
inline bool scale_padding_is_zero(const std::vector<std::uint8_t>& scales, const scale_layout& layout) {
  for (std::int64_t r = 0; r < layout.padded_rows(); ++r)
    for (std::int64_t b = 0; b < layout.padded_cols(); ++b)
      if (layout.is_padding(r, b) && scales[static_cast<std::size_t>(layout.offset(r, b))] != 0) return false;
  return true;
}

/// The fragment epilogue on the host, lane by lane: a warp's 16 x 64 gate/up tiles of a fp32
/// [T, 2I] matrix are laid out in registers by `mma_m16n8_f32_fragment` and handed to the
/// library's host twin `mma_epilogue_host` (fp4fuse/epilogue/host_twin.cuh),
/// which writes packed [T, I/2] and the swizzled scales (padding 0x00) as the device epilogue does.
template <class Activation>
void emulate_fragment_epilogue(const std::vector<float>& gu, int T, int I, const Activation& act, float S,
                               std::vector<std::uint8_t>& packed, std::vector<std::uint8_t>& scales) {
  using frag = fp4fuse::mma_m16n8_f32_fragment;
  constexpr int tiles = 8;  // 64 gate/up columns = 2 NVFP4 blocks per warp tile
  const scale_layout layout{T, I / 16};
  packed.assign(static_cast<std::size_t>(T) * I / 2, 0);
  scales.assign(static_cast<std::size_t>(layout.size_bytes()), 0xAB);
  const fp4fuse::quantized_matrix<fmt, scale_layout> out{packed.data(), I / 2, scales.data(), layout};
  const fp4fuse::block_codec<fmt> codec(S);
  static float acc[32][tiles][4];
  for (std::int64_t row0 = 0; row0 < layout.padded_rows(); row0 += 16) {
    for (std::int64_t gu0 = 0; gu0 < 32 * layout.padded_cols(); gu0 += 8 * tiles) {
      for (int lane = 0; lane < 32; ++lane)
        for (int n = 0; n < tiles; ++n)
          for (int r = 0; r < 4; ++r) {
            const std::int64_t row = row0 + frag::row(lane, r), col = gu0 + 8 * n + frag::col(lane, r);
            acc[lane][n][r] = row < T && col < 2 * I ? gu[static_cast<std::size_t>(row * 2 * I + col)] : 0.0f;
          }
      fp4fuse::mma_epilogue_host(fp4fuse::fused_epilogue{codec, fp4fuse::sink::direct{out}, act}, acc, {row0, gu0});
    }
  }
}

}  // namespace l1_gemm::host
