#pragma once
/// \file quantized_matrix.cuh
/// `quantized_matrix<Format, Layout>`: where an NVFP4/MXFP4 matrix lives: its packed E2M1 rows,
/// their pitch, its scale tensor and the scale layout. The layout holds the shape (rows and scale
/// columns), so the descriptor states each fact once: `rows()` is the layout's rows and `cols()`
/// its scale columns times the format's block size. The standalone kernels and the fused
/// epilogues take it as their quantized output (`dequantize` as its input).
/// \code
/// using F = fp4fuse::format::nvfp4<>;
/// const fp4fuse::scale_layout::swizzled_128x4 layout{M, K / F::block_size};
/// // packed: M * (K / 2) bytes; scales: layout.size_bytes() bytes
/// const fp4fuse::quantized_matrix<F, fp4fuse::scale_layout::swizzled_128x4> out{packed, K / 2, scales, layout};
/// \endcode
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/format.cuh"

namespace fp4fuse {

/// An NVFP4/MXFP4 matrix of `layout.rows` rows and `layout.scale_cols * Format::block_size`
/// columns. `Byte` is `cuda::std::uint8_t` for outputs and `const cuda::std::uint8_t` for inputs.
template <class Format, class Layout, class Byte = cuda::std::uint8_t>
struct quantized_matrix {
  static_assert(detail::is_format<Format>, "fp4fuse::quantized_matrix<Format, Layout>: Format must be format::nvfp4<R> or format::mxfp4<R>");
  static_assert(cuda::std::is_same_v<cuda::std::remove_const_t<Byte>, cuda::std::uint8_t>,
                "fp4fuse::quantized_matrix: Byte must be uint8_t or const uint8_t");
  /// The format (block size, scale type, recipe).
  using format_type = Format;
  /// The scale layout type.
  using layout_type = Layout;
  /// Packed E2M1 rows: row r's element c is nibble c % 2 of byte r * ld_packed + c / 2.
  Byte* packed = nullptr;
  /// Bytes between the starts of consecutive packed rows (>= cols() / 2).
  cuda::std::int64_t ld_packed = 0;
  /// The scale tensor, `layout.size_bytes()` bytes.
  Byte* scales = nullptr;
  /// The scale layout, built for {rows, cols / block size}.
  Layout layout{};

  /// Rows of the matrix: `layout.rows`.
  /// \code
  /// static_assert(fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4>{nullptr, K / 2, nullptr, {100, K / 16}}.rows() == 100);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t rows() const { return layout.rows; }
  /// Columns of the matrix: `layout.scale_cols * Format::block_size`.
  /// \code
  /// static_assert(fp4fuse::quantized_matrix<fp4fuse::format::mxfp4<>, fp4fuse::scale_layout::linear>{nullptr, K / 2, nullptr, {M, K / 32}}.cols() == K);
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr cuda::std::int64_t cols() const { return layout.scale_cols * Format::block_size; }
};

}  // namespace fp4fuse
