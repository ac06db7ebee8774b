#pragma once
/// \file matrix_view.cuh
/// `matrix_view<T>`: a row-major matrix in memory (pointer, rows, columns, leading dimension in
/// elements), the input and plain output descriptor of every launcher.
/// \code
/// fp4fuse::matrix_view<const __nv_bfloat16> x{d_x, M, K, K};  // [M, K], rows K elements apart
/// \endcode
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"

namespace fp4fuse {

/// A row-major [rows, cols] matrix of T whose rows start `ld` elements apart (ld >= cols). Built
/// from its four fields in order (a constructor, not an aggregate, so that an initializer list
/// meant for another type cannot fill it by brace elision).
template <class T>
struct matrix_view {
  /// The element type (const for inputs).
  using value_type = T;
  /// An empty view (null data, 0 x 0).
  /// \code
  /// constexpr fp4fuse::matrix_view<const float> none;
  /// static_assert(none.data == nullptr && none.rows == 0 && none.cols == 0);
  /// \endcode
  constexpr matrix_view() = default;
  /// The matrix at `data_` with `rows_` rows of `cols_` elements, `ld_` elements apart.
  /// \code
  /// const fp4fuse::matrix_view<const __nv_bfloat16> left{d_x, M, K, 2 * K};  // the left half of an [M, 2K] matrix
  /// \endcode
  FP4FUSE_HOST_DEVICE constexpr matrix_view(T* data_, cuda::std::int64_t rows_, cuda::std::int64_t cols_, cuda::std::int64_t ld_)
      : data(data_), rows(rows_), cols(cols_), ld(ld_) {}
  /// A view of const elements of a view of mutable ones.
  /// \code
  /// __nv_bfloat16* d_out = nullptr;  // [M, K] in device memory
  /// const fp4fuse::matrix_view<__nv_bfloat16> out{d_out, M, K, K};
  /// const fp4fuse::matrix_view<const __nv_bfloat16> in = out;  // the same matrix, read-only
  /// \endcode
  template <class U, class = cuda::std::enable_if_t<cuda::std::is_same_v<const U, T> && !cuda::std::is_const_v<U>>>
  FP4FUSE_HOST_DEVICE constexpr matrix_view(const matrix_view<U>& m) : data(m.data), rows(m.rows), cols(m.cols), ld(m.ld) {}
  /// Element (0, 0).
  T* data = nullptr;
  /// Rows (M).
  cuda::std::int64_t rows = 0;
  /// Columns: elements per row.
  cuda::std::int64_t cols = 0;
  /// Leading dimension: elements between the starts of consecutive rows.
  cuda::std::int64_t ld = 0;
};

}  // namespace fp4fuse
