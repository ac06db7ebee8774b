// Device code built with settings fp4fuse refuses (tests/compile/build_flags.py): with --use_fast_math: fp4fuse's codecs and kernels
// must refuse it at run time with a sentence, and an IEEE build must carry no trace of the check.
#include <fp4fuse/fp4fuse.cuh>

__global__ void codec_kernel(const float* x, const float* S, fp4fuse::quantized_block<fp4fuse::format::nvfp4<>>* out) {
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = x[threadIdx.x * 16 + i];
  out[threadIdx.x] = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(*S).quantize(v);
}
