// A program outside fp4fuse's tree that uses it the way a consumer would: the umbrella header and
// the GEMM engine's (fp4fuse/gemm/), host calls, and a kernel compiled for sm_90a. tests/consumers/consumers.py
// builds it against an installed tree (pkg-config, CMake), a Meson subproject and a plain copy.
//
//   consumer LABEL     prints what it computed; exit 0 when every value is as expected
#include <fp4fuse/fp4fuse.cuh>
#include <fp4fuse/gemm/dense.cuh>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>

// Compiled for the device too (not launched without a GPU).
__global__ void encode_kernel(const float* x, unsigned* out) {
  float v[8];
  for (int i = 0; i < 8; ++i) v[i] = x[i];
  *out = fp4fuse::e2m1x8_encode(v);
}

int main(int argc, char** argv) {
  const char* label = argc > 1 ? argv[1] : "consumer";
  int failures = 0;
  const auto check = [&failures](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAIL: %s\n", what);
      ++failures;
    }
  };

  static_assert(fp4fuse::e2m1_encode_software(2.5f) == 0x4, "E2M1 ties to even");
  const unsigned nibble = fp4fuse::e2m1_encode_software(-3.2f);
  check(nibble == 0xD, "e2m1_encode_software(-3.2f) == 0xD");
  check(fp4fuse::e2m1_decode(0xF) == -6.0f, "e2m1_decode(0xF) == -6");

  float x[16] = {0.1f, -0.7f, 2.5f, 6.0f};  // the rest are zero
  const float S = fp4fuse::nvfp4_global_encode_scale(6.0f);
  const fp4fuse::block_codec<fp4fuse::format::nvfp4<>> codec(S);
  const fp4fuse::quantized_block<fp4fuse::format::nvfp4<>> b = codec.quantize(x);
  float y[16];
  codec.dequantize(b, y);
  check(S == 448.0f, "nvfp4_global_encode_scale(6) == 448");
  check(b.scale == 0x7E, "block scale byte 0x7E (448)");
  check(((b.packed[0] >> 12) & 0xFu) == 0x7u, "element 3 (6.0) encodes to 0x7");
  check(std::fabs(y[3] - 6.0f) < 1e-5f, "element 3 decodes to 6");

  std::printf("%s: fp4fuse %s, e2m1(-3.2) = 0x%X, NVFP4 scale 0x%02X, packed 0x%08X%08X, y[3] = %g\n", label,
              FP4FUSE_VERSION_STRING, nibble, static_cast<unsigned>(b.scale), b.packed[1], b.packed[0], y[3]);

  // The GEMM engine's host side: plans, the dispatch table's instances, a forced plan refused with
  // a sentence (none of these instantiate a kernel).
  const fp4fuse::gemm::sm90::launch_plan dense = fp4fuse::gemm::sm90::plan(4096, 4096, 7168, 132);
  check(dense.pingpong == 1 && dense.block_n == 128, "the dense plan at T = 4096 is the 128 x 128 ping-pong");
  check(fp4fuse::gemm::sm90::plan(4096, 4096, 7168, 132, true).block_n == 256,
        "with a staged BF16 store and K = 7168 the dense plan at T = 4096 is the cooperative 128 x 256");
  check(fp4fuse::gemm::sm90::valid(fp4fuse::gemm::sm90::plan_grouped(32768, 256)), "the grouped plan names a kernel");
  const fp4fuse::gemm::sm90::launch_plan bad{96, 1, 0};
  const fp4fuse::result refused = fp4fuse::gemm::sm90::validate_plan(&bad);
  check(!refused && std::strstr(refused.message(), "no dense kernel has 128 x 96") != nullptr, "a 128 x 96 plan is refused with a sentence");
  std::printf("%s: gemm plan %dx%d %s; refusal: %s\n", label, dense.block_m, dense.block_n, dense.pingpong == 1 ? "ping-pong" : "cooperative",
              refused.message());

  // The device path where the sm_90a image can run; a machine without that GPU skips it.
  int devices = 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 && cudaGetDeviceProperties(&prop, 0) == cudaSuccess &&
      prop.major == 9 && prop.minor == 0) {
    const float v[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float* d_x = nullptr;
    unsigned* d_out = nullptr;
    unsigned out = 0;
    bool ok = cudaMalloc(&d_x, sizeof v) == cudaSuccess && cudaMalloc(&d_out, sizeof out) == cudaSuccess &&
              cudaMemcpy(d_x, v, sizeof v, cudaMemcpyHostToDevice) == cudaSuccess;
    if (ok) {
      encode_kernel<<<1, 1>>>(d_x, d_out);
      ok = cudaGetLastError() == cudaSuccess && cudaMemcpy(&out, d_out, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess;
    }
    cudaFree(d_x);
    cudaFree(d_out);
    check(ok && out == 0x76543210u, "device e2m1x8_encode == 0x76543210");
    std::printf("%s: device path on %s: 0x%08X\n", label, prop.name, out);
  } else {
    std::printf("%s: no sm_90 GPU here: host path only (the kernel was compiled for sm_90a)\n", label);
  }
  return failures == 0 ? 0 : 1;
}
