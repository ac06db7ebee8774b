#pragma once
// The launch and validation helpers the GEMM engine shares with the library's standalone
// kernels: the argument checker (a sentence per refusal), the CUDA-error mapping, the kernel-image
// check and the post-launch check. The one place the gemm module reaches the library's internals;
// everything else in include/fp4fuse/gemm/ names these through fp4fuse::gemm::detail.
#include "fp4fuse/detail/launch.cuh"

namespace fp4fuse::gemm::detail {

using fp4fuse::detail::check_kernel_image;
using fp4fuse::detail::checker;
using fp4fuse::detail::cuda_failure;
using fp4fuse::detail::is_aligned;
using fp4fuse::detail::launch_result;

}  // namespace fp4fuse::gemm::detail
