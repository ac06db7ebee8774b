#pragma once
/// \file epilogue/bulk_store.cuh
/// The staged sink's copy engine: packed bytes written to shared memory, made visible to the async
/// proxy and copied to global memory by `cp.async.bulk.global.shared::cta.bulk_group` (cuda::ptx),
/// sm_90 and later. `wait_staged_stores` is the one call a kernel makes before it reuses the
/// staging memory or exits.
#include <cuda/ptx>
#include <cuda/std/cstdint>

#include "fp4fuse/config.cuh"

namespace fp4fuse {

namespace detail {

/// Makes the calling thread's shared-memory writes visible to the async proxy
/// (`fence.proxy.async.shared::cta`): before a bulk copy, issued by this or (after a barrier) another thread, reads them.
FP4FUSE_DEVICE void bulk_store_fence() {
#if FP4FUSE_ARCH_HAS_SM90
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#else
  __trap();  // cp.async.bulk needs sm_90: never write nothing silently
#endif
}

/// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from shared to global memory
/// as one bulk copy of the calling thread's current bulk group; `bulk_store_commit` closes it.
FP4FUSE_DEVICE void bulk_store(void* global_dst, const void* shared_src, cuda::std::uint32_t bytes) {
#if FP4FUSE_ARCH_HAS_SM90
  cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, global_dst, shared_src, bytes);
#else
  (void)global_dst, (void)shared_src, (void)bytes;
  __trap();
#endif
}

/// Commits the calling thread's bulk copies issued so far as one bulk group.
FP4FUSE_DEVICE void bulk_store_commit() {
#if FP4FUSE_ARCH_HAS_SM90
  cuda::ptx::cp_async_bulk_commit_group();
#else
  __trap();
#endif
}

}  // namespace detail

/// Waits until the calling thread's bulk copies (the staged sink of any adapter) have read their
/// shared memory (`cp.async.bulk.wait_group.read 0`): the staging can then be reused, and the CTA
/// may exit. In the fragment forms one lane of each quad copies what the quad staged: there, the
/// warp calls it and then `__syncwarp()` before the staging is reused. sm_90 and later; traps
/// elsewhere.
/// \code
/// __device__ void before_reuse() {
///   fp4fuse::wait_staged_stores();
///   __syncwarp();  // fragment forms: the copying lane has waited for the whole warp's staging
/// }
/// \endcode
FP4FUSE_DEVICE void wait_staged_stores() {
#if FP4FUSE_ARCH_HAS_SM90
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
#else
  __trap();
#endif
}

}  // namespace fp4fuse
