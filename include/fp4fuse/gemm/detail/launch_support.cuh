#pragma once
// The GEMM engine's short names for the library's public launch and validation helpers
// (fp4fuse/launch.cuh): the engine's launchers check their arguments, map CUDA errors and check
// kernel images and launches exactly as the library's standalone launchers do, through the public
// API only. The sm_90a engine's files name them through fp4fuse::gemm::detail.
#include "fp4fuse/launch.cuh"

namespace fp4fuse::gemm::detail {

using checker = fp4fuse::argument_checker;
using fp4fuse::check_kernel_image;
using fp4fuse::cuda_failure;
using fp4fuse::is_aligned;
using fp4fuse::launch_result;

}  // namespace fp4fuse::gemm::detail
