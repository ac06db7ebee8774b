// Compiled (never run) by tests/compile/cccl_minimum.py against the oldest CCCL fp4fuse supports:
// every public header but the CUTLASS node's (which needs CUTLASS), the GEMM engine's included, and
// a use of each layout's size arithmetic (the `round_up` that CCCL 2.8 lacks, through
// fp4fuse::detail::round_up), in a kernel and on the host.
#include <fp4fuse/fp4fuse.cuh>
#include <fp4fuse/gemm/dense.cuh>
#include <fp4fuse/gemm/grouped.cuh>
#include <fp4fuse/gemm/sm90.cuh>

#include <cuda/version>

#if !defined(EXPECT_CCCL_MAJOR) || !defined(EXPECT_CCCL_MINOR)
#  error "cccl_minimum.cu: pass -DEXPECT_CCCL_MAJOR=.. -DEXPECT_CCCL_MINOR=.. (the CCCL the include path must resolve to)"
#endif
static_assert(CCCL_MAJOR_VERSION == EXPECT_CCCL_MAJOR && CCCL_MINOR_VERSION == EXPECT_CCCL_MINOR,
              "cccl_minimum.cu: the include path resolved to another CCCL than the one under test");

__global__ void cccl_minimum_kernel(std::int64_t rows, std::int64_t cols, const std::int32_t* offsets, std::int64_t* out) {
  const fp4fuse::scale_layout::swizzled_128x4 dense{rows, cols};
  const fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::padded_prefix_sum> grouped{rows, cols, 4, offsets};
  out[0] = dense.size_bytes() + grouped.padded_rows() + grouped.padded_cols() + grouped.offset(rows - 1, cols - 1) + grouped.is_padding(0, 0);
}

// fp4fuse::detail::round_up's own arithmetic (CCCL < 3.0 has no cuda::round_up): values and the
// common type, as cuda::round_up gives them.
#include "../detail/round_up_asserts.cuh"

int main() {
  constexpr fp4fuse::scale_layout::swizzled_128x4 layout{130, 5};
  static_assert(layout.size_bytes() == 256 * 8, "round_up(130, 128) x round_up(5, 4)");
  return 0;
}
