// quantized_matrix.cuh on the host: the shape comes from the layout alone (rows() its rows,
// cols() its scale columns times the format's block size: 16 for NVFP4, 32 for MXFP4), for the
// linear, swizzled and grouped layouts; the fields keep what they were given; and a const view
// (Byte = const uint8_t) reads the same shape.
#include <fp4fuse/quantized_matrix.cuh>
#include <fp4fuse/scale_layout.cuh>

#include <cstdint>
#include <type_traits>

#include "test_support.hpp"

TEST_CASE("quantized_matrix: rows and columns from the layout and the format's block size", "[quantized_matrix]") {
  using nvfp4_t = fp4fuse::format::nvfp4<>;
  using mxfp4_t = fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>;
  std::uint8_t packed[16] = {}, scales[16] = {};
  const fp4fuse::quantized_matrix<nvfp4_t, fp4fuse::scale_layout::swizzled_128x4> a{packed, 88, scales, {100, 11}};
  CHECK(a.rows() == 100);
  CHECK(a.cols() == 176);
  CHECK(a.packed == packed);
  CHECK(a.scales == scales);
  CHECK(a.ld_packed == 88);
  const fp4fuse::quantized_matrix<mxfp4_t, fp4fuse::scale_layout::linear, const std::uint8_t> b{packed, 48, scales, {3, 3}};
  CHECK(b.rows() == 3);
  CHECK(b.cols() == 96);
  static_assert(std::is_same_v<decltype(b.packed), const std::uint8_t*>, "an input's bytes are const");
  const std::int32_t offsets[3] = {0, 5, 9};
  using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::padded_prefix_sum>;
  const fp4fuse::quantized_matrix<nvfp4_t, grouped> g{packed, 32, scales, grouped{9, 4, 2, offsets}};
  CHECK(g.rows() == 9);
  CHECK(g.cols() == 64);
  static_assert(fp4fuse::quantized_matrix<nvfp4_t, fp4fuse::scale_layout::linear>{nullptr, 8, nullptr, {7, 1}}.cols() == 16, "constexpr");
  static_assert(std::is_same_v<decltype(a)::format_type, nvfp4_t> && std::is_same_v<decltype(b)::layout_type, fp4fuse::scale_layout::linear>);
}
