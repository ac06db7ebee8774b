// matrix_view.cuh on the host: the four fields in order, an empty default, the one conversion it
// allows (mutable to const elements of the same type) and the ones it refuses, and that it is not
// an aggregate (brace elision cannot fill it from an initializer list meant for another type).
#include <fp4fuse/matrix_view.cuh>

#include <cuda_bf16.h>

#include <type_traits>

#include "test_support.hpp"

TEST_CASE("matrix_view: fields in order, the const conversion only, not an aggregate", "[matrix_view]") {
  using bf16 = __nv_bfloat16;
  static_assert(!std::is_aggregate_v<fp4fuse::matrix_view<bf16>>, "a constructor, not brace elision");
  static_assert(std::is_convertible_v<fp4fuse::matrix_view<bf16>, fp4fuse::matrix_view<const bf16>>, "mutable to const");
  static_assert(!std::is_convertible_v<fp4fuse::matrix_view<const bf16>, fp4fuse::matrix_view<bf16>>, "never const to mutable");
  static_assert(!std::is_convertible_v<fp4fuse::matrix_view<float>, fp4fuse::matrix_view<const bf16>>, "never across element types");
  static_assert(!std::is_constructible_v<fp4fuse::matrix_view<float>, float*, long long, long long>, "all four fields, or none");
  static_assert(std::is_trivially_copyable_v<fp4fuse::matrix_view<const bf16>>, "passed to kernels by value");
  constexpr fp4fuse::matrix_view<const float> none;
  static_assert(none.data == nullptr && none.rows == 0 && none.cols == 0 && none.ld == 0, "empty by default");

  bf16 storage[6 * 10] = {};
  const fp4fuse::matrix_view<bf16> m{storage + 2, 6, 7, 10};  // columns 2..8 of a [6, 10] matrix
  CHECK(m.data == storage + 2);
  CHECK(m.rows == 6);
  CHECK(m.cols == 7);
  CHECK(m.ld == 10);
  const fp4fuse::matrix_view<const bf16> c = m;
  CHECK(c.data == m.data);
  CHECK(c.rows == m.rows);
  CHECK(c.cols == m.cols);
  CHECK(c.ld == m.ld);
  CHECK(std::is_same_v<decltype(c)::value_type, const bf16>);
  // 64-bit extents: rows x ld beyond 2^31 elements is representable.
  const fp4fuse::matrix_view<const bf16> big{nullptr, 1 << 20, 5760, 5760};
  CHECK(big.rows * big.ld == 6039797760LL);
}
