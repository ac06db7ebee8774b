// gemm/epilogues.cuh on the host: the dense epilogue bindings' own refusals (`check`, which
// fp4fuse::gemm::gemm calls before any CUDA call), one condition at a time, each with its status
// and a sentence that names the field; a valid binding leaves the checker ok. (tests/gemm/dense.cu
// checks the same refusals' status codes through gemm(); tile_grid.cu the bindings' granules.)
#include <fp4fuse/gemm/epilogues.cuh>

#include <cstdint>
#include <cstring>
#include <string>

#include "../test_support.hpp"

namespace {

using fp4fuse::status;

/// Fake, never dereferenced pointers at the given address (aligned as the address is).
template <class T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

/// The outcome of `epi.check` in a fresh checker for "gemm".
template <class Epilogue>
fp4fuse::result checked(const Epilogue& epi) {
  fp4fuse::argument_checker c("gemm");
  epi.check(c);
  return c.outcome();
}

/// `r` has status `s` and a sentence that starts with the entry point and contains `words`.
void refused(const fp4fuse::result& r, status s, const char* words) {
  INFO(r.message());
  CHECK(r.code == s);
  CHECK(std::string(r.message()).rfind("gemm: ", 0) == 0);
  CHECK(std::strstr(r.message(), words) != nullptr);
}

}  // namespace

TEST_CASE("dense epilogues: the BF16 stores refuse outputs their 4-byte pair stores cannot write, and biases they cannot read",
          "[gemm]") {
  auto* h = at<__nv_bfloat16>(0x100000);
  const fp4fuse::matrix_view<__nv_bfloat16> ok{h, 64, 256, 256};
  const float* bias = at<const float>(0x200000);
  CHECK(checked(fp4fuse::gemm::store_bf16{ok}).code == status::ok);
  CHECK(checked(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{bias, 256}}).code == status::ok);
  CHECK(checked(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{nullptr, 0}}).code == status::ok);  // no column has a bias
  refused(checked(fp4fuse::gemm::store_bf16{{nullptr, 64, 256, 256}}), status::null_pointer, "store_bf16.out.data is null");
  refused(checked(fp4fuse::gemm::store_bf16{{h + 1, 64, 256, 256}}), status::misaligned_pointer, "store_bf16.out.data");
  refused(checked(fp4fuse::gemm::store_bf16{{h, 64, 255, 256}}), status::bad_shape, "store_bf16.out.cols = 255 must be even");
  refused(checked(fp4fuse::gemm::store_bf16{{h, 64, 256, 257}}), status::bad_leading_dimension, "store_bf16.out.ld = 257");
  refused(checked(fp4fuse::gemm::store_bf16{{h, 64, 256, 254}}), status::bad_leading_dimension, "store_bf16.out.ld = 254");
  refused(checked(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{nullptr, 256}}), status::null_pointer, "store_bf16.bias.data is null");
  refused(checked(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{at<const float>(0x200002), 256}}), status::misaligned_pointer,
          "store_bf16.bias.data");
  refused(checked(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{bias, -2}}), status::bad_shape, "store_bf16.bias.count = -2 must be >= 0");

  using act = fp4fuse::activation::swiglu;
  const fp4fuse::matrix_view<__nv_bfloat16> half{h, 64, 128, 128};
  CHECK(checked(fp4fuse::gemm::swiglu_bf16<act>{half, act{}}).code == status::ok);
  refused(checked(fp4fuse::gemm::swiglu_bf16<act>{{nullptr, 64, 128, 128}, act{}}), status::null_pointer, "swiglu_bf16.out.data is null");
  refused(checked(fp4fuse::gemm::swiglu_bf16<act>{{h, 64, 128, 127}, act{}}), status::bad_leading_dimension, "swiglu_bf16.out.ld = 127");
  refused(checked(fp4fuse::gemm::swiglu_bf16<act>{{h, 64, 127, 128}, act{}}), status::bad_shape, "swiglu_bf16.out.cols = 127 must be even");
  refused(checked(fp4fuse::gemm::swiglu_bf16<act>{{h + 1, 64, 128, 128}, act{}}), status::misaligned_pointer, "swiglu_bf16.out.data");
  refused(checked(fp4fuse::gemm::swiglu_bf16<act, fp4fuse::column_bias>{half, act{}, {nullptr, 256}}), status::null_pointer,
          "swiglu_bf16.bias.data is null");
}

TEST_CASE("dense epilogues: the fused NVFP4 binding refuses its output, its global encode scale and its bias", "[gemm]") {
  using act = fp4fuse::activation::swiglu;
  using epi_t = fp4fuse::gemm::swiglu_nvfp4<act>;
  using layout = fp4fuse::scale_layout::swizzled_128x4;
  auto* packed = at<std::uint8_t>(0x100000);
  auto* scales = at<std::uint8_t>(0x300000);
  const float* S = at<const float>(0x400000);
  const epi_t ok{{packed, 64, scales, layout{100, 8}}, S, act{}};
  CHECK(checked(ok).code == status::ok);
  epi_t e = ok;
  e.out.packed = nullptr;
  refused(checked(e), status::null_pointer, "swiglu_nvfp4.out.packed is null");
  e = ok;
  e.out.scales = nullptr;
  refused(checked(e), status::null_pointer, "swiglu_nvfp4.out.scales is null");
  e = ok;
  e.out.packed = packed + 4;
  refused(checked(e), status::misaligned_pointer, "swiglu_nvfp4.out.packed");
  e = ok;
  e.out.ld_packed = 60;  // below cols / 2 = 64
  refused(checked(e), status::bad_leading_dimension, "swiglu_nvfp4.out.ld_packed = 60");
  e = ok;
  e.out.ld_packed = 68;  // not a multiple of 8 (one NVFP4 block's bytes)
  refused(checked(e), status::bad_leading_dimension, "swiglu_nvfp4.out.ld_packed = 68");
  e = ok;
  e.out.layout.scale_cols = 0;
  refused(checked(e), status::bad_shape, "swiglu_nvfp4.out.layout.scale_cols = 0 must be > 0");
  e = ok;
  e.global_encode_scale = nullptr;
  refused(checked(e), status::null_pointer, "swiglu_nvfp4.global_encode_scale (S, device memory) is null");
  e = ok;
  e.global_encode_scale = at<const float>(0x400002);
  refused(checked(e), status::misaligned_pointer, "swiglu_nvfp4.global_encode_scale");
  const fp4fuse::gemm::swiglu_nvfp4<act, fp4fuse::intermediate::fp32, fp4fuse::recipe::te_exact, fp4fuse::column_bias> biased{
      ok.out, S, act{}, {nullptr, 256}};
  refused(checked(biased), status::null_pointer, "swiglu_nvfp4.bias.data is null");
  auto negative = biased;
  negative.bias = {S, -1};
  refused(checked(negative), status::bad_shape, "swiglu_nvfp4.bias.count = -1 must be >= 0");
}
