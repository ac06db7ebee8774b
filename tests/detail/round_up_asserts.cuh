#pragma once
// fp4fuse::detail::round_up's values and result type as compile-time checks, shared by the test of
// CCCL 3's path (tests/detail/cmath.cu) and of the fallback, compiled against CCCL 2.8
// (tests/compile/cccl_minimum.cu).
#include <fp4fuse/detail/cmath.cuh>

#include <cstddef>
#include <cstdint>

static_assert(fp4fuse::detail::round_up(130, 128) == 256 && fp4fuse::detail::round_up(128, 128) == 128);
static_assert(fp4fuse::detail::round_up(0, 4) == 0 && fp4fuse::detail::round_up(5, 4) == 8);
static_assert(fp4fuse::detail::round_up(std::int64_t{3} << 40, 1024) == (std::int64_t{3} << 40));
static_assert(fp4fuse::detail::round_up(std::size_t{1025}, std::size_t{1024}) == 2048);
static_assert(cuda::std::is_same_v<decltype(fp4fuse::detail::round_up(std::int64_t{5}, 4)), std::int64_t>);
static_assert(cuda::std::is_same_v<decltype(fp4fuse::detail::round_up(5, 4)), int>);
static_assert(cuda::std::is_same_v<decltype(fp4fuse::detail::round_up(std::size_t{5}, std::size_t{4})), std::size_t>);
