#pragma once
// Host side of the MoE L1 example and its tests: the float64 reference of a routed row (its
// expert's GEMM row, bias, activation), the comparison of the fused grouped output with it, and
// the check that every byte of a grouped scale tensor outside the routed rows' scales is 0x00.
#include <cmath>
#include <cstdint>
#include <vector>

#include "moe_data.cuh"
#include "reference.hpp"

namespace l1_gemm::moe {

using comparison = l1_gemm::host::comparison;

/// The reference of rows of the grouped GEMM whose inputs are `v` (moe_data.cuh).
struct reference {
  values v;
  int H, I;
  bool bias;

  /// Row r (of expert e): the 2I gate/up values in float64 (+ the expert's bias), interleaved as
  /// the GEMM writes them.
  std::vector<double> gate_up_row(int r, int e) const {
    const int N = 2 * I;
    std::vector<double> x(static_cast<std::size_t>(H)), d(static_cast<std::size_t>(N));
    for (int k = 0; k < H; ++k) x[static_cast<std::size_t>(k)] = __bfloat162float(v.x(static_cast<std::uint64_t>(r) * H + k));
    for (int n = 0; n < N; ++n) {
      const std::uint64_t base = (static_cast<std::uint64_t>(e) * N + n) * H;
      double s = 0;
      for (int k = 0; k < H; ++k) s += x[static_cast<std::size_t>(k)] * double(__bfloat162float(v.w(base + k)));
      d[static_cast<std::size_t>(n)] = s + (bias ? double(v.bias(static_cast<std::uint64_t>(e) * N + n)) : 0.0);
    }
    return d;
  }
  /// act(gate) * up of row r, gate and up rounded once to float.
  template <class Activation>
  std::vector<float> activation_row(int r, int e, const Activation& act) const {
    return l1_gemm::host::swiglu_row(gate_up_row(r, e), I, act);
  }
  /// Adds row r (expert e) of the fused grouped output (packed [rows, I/2] and the whole grouped
  /// scale tensor, on the host) to `cmp`.
  template <class Layout, class Activation>
  void compare_row(comparison& cmp, const std::vector<std::uint8_t>& packed, const std::vector<std::uint8_t>& scales, const Layout& layout,
                   int r, int e, const Activation& act, float S) const {
    const std::vector<float> h = activation_row(r, e, act);
    const l1_gemm::host::quantized_row want = l1_gemm::host::quantize_row(h, S);
    std::vector<std::uint8_t> row_scales(static_cast<std::size_t>(I / 16));
    for (int b = 0; b < I / 16; ++b) {
      row_scales[static_cast<std::size_t>(b)] = scales[static_cast<std::size_t>(layout.offset(r, b))];
      cmp.codes += 1;
      cmp.code_diffs += row_scales[static_cast<std::size_t>(b)] != want.scales[static_cast<std::size_t>(b)];
    }
    const std::uint8_t* got = &packed[static_cast<std::size_t>(r) * (I / 2)];
    for (int c = 0; c < I; ++c) {
      const int shift = 4 * (c % 2);
      cmp.codes += 1;
      cmp.code_diffs += ((got[c / 2] >> shift) & 0xF) != ((want.packed[static_cast<std::size_t>(c / 2)] >> shift) & 0xF);
      const double ref = h[static_cast<std::size_t>(c)];
      const double err = l1_gemm::host::dequantized(got, row_scales.data(), c, S) - ref;
      const double ref_err = l1_gemm::host::dequantized(want.packed.data(), want.scales.data(), c, S) - ref;
      cmp.err2 += err * err;
      cmp.ref_err2 += ref_err * ref_err;
      cmp.ref2 += ref * ref;
    }
  }
};

/// True when every byte of a grouped scale tensor that is not the scale of a routed row (expert
/// padding, gaps between experts, the tail) is 0x00. O(size): the routed rows' bytes are marked
/// expert by expert, the rest checked.
template <class Layout>
bool padding_is_zero(const std::vector<std::uint8_t>& scales, const Layout& layout) {
  std::vector<bool> data(scales.size(), false);
  for (int e = 0; e < layout.experts; ++e) {
    const auto b = layout.expert(e);
    for (std::int64_t r = 0; r < b.layout.rows; ++r)
      for (std::int64_t k = 0; k < layout.scale_cols; ++k)
        data[static_cast<std::size_t>(b.start_row * layout.padded_cols() + b.layout.offset(r, k))] = true;
  }
  for (std::size_t i = 0; i < scales.size(); ++i)
    if (!data[i] && scales[i] != 0) return false;
  return true;
}

}  // namespace l1_gemm::moe
