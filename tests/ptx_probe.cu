// Compiled to PTX by tests/check_ptx.py for several targets: which conversion instructions does
// each target's PTX contain?
#include <fp4fuse/fp4fuse.cuh>

__global__ void probe(const float* x, uint32_t* out, float S) {
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = x[threadIdx.x * 16 + i];
  const auto b = fp4fuse::block_codec<fp4fuse::format::nvfp4<>>(S).quantize(v);
  out[threadIdx.x * 4 + 0] = b.packed[0] ^ b.packed[1];
  out[threadIdx.x * 4 + 1] = b.scale | (fp4fuse::ue8m0_encode(v[3], fp4fuse::ue8m0_rounding::up) << 8);
  const __half2 h = fp4fuse::e2m1x2_decode_half2(static_cast<uint8_t>(b.packed[0]));
  out[threadIdx.x * 4 + 2] = __half_as_ushort(h.x) | (__half_as_ushort(h.y) << 16);
  out[threadIdx.x * 4 + 3] = fp4fuse::e2m1_encode(v[5]);
}
