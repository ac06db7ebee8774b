#pragma once
/// \file matrix_view.cuh
/// `matrix_view<T>`: a row-major matrix in memory (pointer, rows, columns, leading dimension in
/// elements), the input and plain output descriptor of every launcher.
/// \code
/// fp4fuse::matrix_view<const __nv_bfloat16> x{d_x, M, K, K};  // [M, K], rows K elements apart
/// \endcode
#include <cuda/std/cstdint>

#include "fp4fuse/config.cuh"

namespace fp4fuse {

/// A row-major [rows, cols] matrix of T whose rows start `ld` elements apart (ld >= cols).
template <class T>
struct matrix_view {
  /// The element type (const for inputs).
  using value_type = T;
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
