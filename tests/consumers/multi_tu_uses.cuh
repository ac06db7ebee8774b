// What each translation unit of the multi-TU consumer (tests/consumers/multi_tu.py) instantiates
// from fp4fuse: one kernel and one host function per TU, their names suffixed with the TU's index
// (FP4FUSE_MULTI_TU_INDEX). Kept to names unlikely to be renamed (e2m1x8_encode, e4m3_encode,
// amax); this is the one place to update when they are.
//
// Two TUs that define the same non-inline function (a non-template __global__ in a header, say)
// make the link fail with `multiple definition of ...`: what the test exists to catch.
#pragma once
#include <fp4fuse/fp4fuse.cuh>

#include <cuda_bf16.h>

#include <cstdint>

#if !defined(FP4FUSE_MULTI_TU_INDEX)
#  error "define FP4FUSE_MULTI_TU_INDEX (0, 1, 2, ...) before including multi_tu_uses.cuh"
#endif
#define FP4FUSE_MULTI_TU_CAT2(a, b) a##b
#define FP4FUSE_MULTI_TU_CAT(a, b) FP4FUSE_MULTI_TU_CAT2(a, b)
#define FP4FUSE_MULTI_TU_NAME(name) FP4FUSE_MULTI_TU_CAT(name, FP4FUSE_MULTI_TU_INDEX)

// Device code: the same library functions instantiated in every TU.
__global__ void FP4FUSE_MULTI_TU_NAME(multi_tu_encode_kernel_)(const float* x, std::uint32_t* out) {
  float v[8];
  for (int i = 0; i < 8; ++i) v[i] = x[i];
  out[0] = fp4fuse::e2m1x8_encode(v);
  out[1] = fp4fuse::e4m3_encode(x[0]);
}

// Host: the launcher templates' addresses (instantiating them and the kernels they launch) and the
// host path of the same functions. Returns the number of failed checks.
int FP4FUSE_MULTI_TU_NAME(multi_tu_check_)() {
  int failures = 0;
  const auto amax_f = &fp4fuse::amax<const float, fp4fuse::global_scale::per_tensor, fp4fuse::nan_policy::ignore>;
  const auto amax_bf16 = &fp4fuse::amax<const __nv_bfloat16, fp4fuse::global_scale::none, fp4fuse::nan_policy::propagate>;
  const auto kernel = &FP4FUSE_MULTI_TU_NAME(multi_tu_encode_kernel_);
  failures += amax_f == nullptr || amax_bf16 == nullptr || kernel == nullptr;

  const float v[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  failures += fp4fuse::e2m1x8_encode(v) != 0x76543210u;
  failures += fp4fuse::e4m3_encode(448.0f) != 0x7E;
  return failures;
}
