// Compiled once per target by tests/meson.build with the expected predicate values; a wrong
// predicate fails the compilation (this file is never run).
#include <fp4fuse/config.cuh>

#if defined(__CUDA_ARCH__)
static_assert(FP4FUSE_ARCH_HAS_E2M1_CVT == EXPECT_E2M1_CVT, "FP4FUSE_ARCH_HAS_E2M1_CVT disagrees with the target");
static_assert(FP4FUSE_ARCH_HAS_E4M3_CVT == EXPECT_E4M3_CVT, "FP4FUSE_ARCH_HAS_E4M3_CVT disagrees with the target");
static_assert(FP4FUSE_ARCH_IS_SM90A == EXPECT_SM90A, "FP4FUSE_ARCH_IS_SM90A disagrees with the target");
static_assert(FP4FUSE_ARCH_HAS_SM90 == (__CUDA_ARCH__ >= 900), "FP4FUSE_ARCH_HAS_SM90 disagrees with the target");
static_assert(FP4FUSE_DEVICE_PASS == 1, "device pass");
#else
static_assert(FP4FUSE_ARCH_HAS_E2M1_CVT == 0 && FP4FUSE_ARCH_HAS_E4M3_CVT == 0 && FP4FUSE_ARCH_HAS_SM90 == 0 && FP4FUSE_ARCH_IS_SM90A == 0 &&
                  FP4FUSE_DEVICE_PASS == 0,
              "the host pass has no device features");
#endif

__global__ void touch(int* out) { *out = static_cast<int>(fp4fuse::active_e2m1_path()); }
