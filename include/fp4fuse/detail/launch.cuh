#pragma once
// The standalone kernels' checked launch (`<<<blocks, threads, 0, stream>>>` between the public
// kernel-image and launch checks of fp4fuse/launch.cuh). Host code; not part of the public API.
#include <cuda_runtime_api.h>

#include <cuda/std/cstdint>

#include "fp4fuse/launch.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse::detail {

/// Checks the kernel image, launches `kernel<<<blocks, threads, 0, stream>>>(args...)` and checks
/// the launch: every standalone kernel starts this way, after its validation.
template <class... Params, class... Args>
inline result launch(void (*kernel)(Params...), cuda::std::int64_t blocks, int threads, cudaStream_t stream, const char* entry_point,
                     Args&&... args) {
  if (result r = check_kernel_image(kernel, entry_point); !r) return r;
  kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(static_cast<Args&&>(args)...);
  return launch_result(entry_point);
}

}  // namespace fp4fuse::detail

