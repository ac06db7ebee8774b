// Built for sm_100a only (tests/meson.build): on any other GPU every launcher must report
// unsupported_architecture and write nothing.
#include <fp4fuse/fp4fuse.cuh>

#include "kernel_test_support.cuh"

using namespace fp4fuse_test;

TEST_CASE("launchers [gpu]: a GPU missing from the build's -gencode list is refused, memory untouched", "[gpu][arch]") {
  cudaDeviceProp prop{};
  FP4FUSE_TEST_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major == 10 && prop.minor == 0) {
    SUCCEED("this GPU is sm_100: the image exists; nothing to check");
    return;
  }
  device_buffer in(64 * 64 * 2), out(64 * 32), sc(512), S(4);
  const float one = 1.0f;
  S.upload(&one, 4);
  using L = fp4fuse::scale_layout::swizzled_128x4;
  const fp4fuse::result r = fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{in.as<__nv_bfloat16>(), 64, 64, 64},
                                              fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, L>{out.as<std::uint8_t>(), 32, sc.as<std::uint8_t>(), L{64, 4}},
                                              fp4fuse::global_scale::per_tensor{S.as<float>()});
  CHECK(r.code == fp4fuse::status::unsupported_architecture);
  INFO(r.message());
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  for (unsigned char c : out.download()) REQUIRE(c == poison);
  for (unsigned char c : sc.download()) REQUIRE(c == poison);
  float amax_value = 0;
  device_buffer amax_out(4);
  CHECK(fp4fuse::amax(fp4fuse::matrix_view<const __nv_bfloat16>{in.as<__nv_bfloat16>(), 64, 64, 64}, amax_out.as<float>(),
                      fp4fuse::global_scale::none{}).code ==
        fp4fuse::status::unsupported_architecture);
  FP4FUSE_TEST_CUDA(cudaMemcpy(&amax_value, amax_out.as<float>(), 4, cudaMemcpyDeviceToHost));
  CHECK(bits_of(amax_value) == 0xA5A5A5A5u);
  CHECK(cudaGetLastError() == cudaSuccess);  // the failed query left no sticky error behind
}
