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

/// The outcome of `epi.check` for a GEMM output D of M x N in a fresh checker for "gemm".
template <class Epilogue>
fp4fuse::result checked(const Epilogue& epi, fp4fuse::gemm::index_t M, fp4fuse::gemm::index_t N) {
  fp4fuse::argument_checker c("gemm");
  epi.check(c, M, N);
  return c.outcome();
}
/// D of 64 x 256: the first test case's outputs (64 x 256 stored, 64 x 128 after SwiGLU).
template <class Epilogue>
fp4fuse::result checked_64x256(const Epilogue& epi) {
  return checked(epi, 64, 256);
}
/// D of 100 x 256: the NVFP4 test case's output (100 rows, 8 scale columns of 16 outputs).
template <class Epilogue>
fp4fuse::result checked_100x256(const Epilogue& epi) {
  return checked(epi, 100, 256);
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
  CHECK(checked_64x256(fp4fuse::gemm::store_bf16{ok}).code == status::ok);
  CHECK(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{bias, 256}}).code == status::ok);
  CHECK(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{nullptr, 0}}).code == status::ok);  // no column has a bias
  refused(checked_64x256(fp4fuse::gemm::store_bf16{{nullptr, 64, 256, 256}}), status::null_pointer, "store_bf16.out.data is null");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{{h + 1, 64, 256, 256}}), status::misaligned_pointer, "store_bf16.out.data");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{{h, 64, 255, 256}}), status::bad_shape, "store_bf16.out.cols = 255 must be even");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{{h, 64, 256, 257}}), status::bad_leading_dimension, "store_bf16.out.ld = 257");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{{h, 64, 256, 254}}), status::bad_leading_dimension, "store_bf16.out.ld = 254");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{nullptr, 256}}), status::null_pointer, "store_bf16.bias.data is null");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{at<const float>(0x200002), 256}}), status::misaligned_pointer,
          "store_bf16.bias.data");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{bias, -2}}), status::bad_shape, "store_bf16.bias.count = -2 must be even and >= 0");

  using act = fp4fuse::activation::swiglu;
  const fp4fuse::matrix_view<__nv_bfloat16> half{h, 64, 128, 128};
  CHECK(checked_64x256(fp4fuse::gemm::swiglu_bf16<act>{half, act{}}).code == status::ok);
  refused(checked_64x256(fp4fuse::gemm::swiglu_bf16<act>{{nullptr, 64, 128, 128}, act{}}), status::null_pointer, "swiglu_bf16.out.data is null");
  refused(checked_64x256(fp4fuse::gemm::swiglu_bf16<act>{{h, 64, 128, 127}, act{}}), status::bad_leading_dimension, "swiglu_bf16.out.ld = 127");
  refused(checked_64x256(fp4fuse::gemm::swiglu_bf16<act>{{h, 64, 127, 128}, act{}}), status::bad_shape, "swiglu_bf16.out.cols = 127 must be even");
  refused(checked_64x256(fp4fuse::gemm::swiglu_bf16<act>{{h + 1, 64, 128, 128}, act{}}), status::misaligned_pointer, "swiglu_bf16.out.data");
  refused(checked_64x256(fp4fuse::gemm::swiglu_bf16<act, fp4fuse::column_bias>{half, act{}, {nullptr, 256}}), status::null_pointer,
          "swiglu_bf16.bias.data is null");
  // Two columns' bias are one 8-byte load (mma_add_bias): 4-byte aligned data and an odd count refused.
  refused(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{at<const float>(0x200004), 256}}), status::misaligned_pointer,
          "store_bf16.bias.data (0x200004) must be 8-byte aligned");
  refused(checked_64x256(fp4fuse::gemm::store_bf16{ok, fp4fuse::column_bias{bias, 255}}), status::bad_shape,
          "store_bf16.bias.count = 255 must be even");
  // The output's extent is D's: M x N stored, M x N / 2 after SwiGLU; N whole SwiGLU granule pairs.
  refused(checked(fp4fuse::gemm::store_bf16{ok}, 64, 128), status::bad_shape, "store_bf16.out is [64, 256]: the GEMM writes [64, 128]");
  refused(checked(fp4fuse::gemm::store_bf16{ok}, 63, 256), status::bad_shape, "the GEMM writes [63, 256]");
  refused(checked(fp4fuse::gemm::swiglu_bf16<act>{half, act{}}, 64, 128), status::bad_shape, "swiglu_bf16.out is [64, 128]: the GEMM writes [64, 64]");
  refused(checked(fp4fuse::gemm::swiglu_bf16<act>{{h, 64, 124, 128}, act{}}, 64, 248), status::not_multiple_of_block,
          "N = 248: swiglu_bf16 needs a multiple of 16");
  CHECK(checked(fp4fuse::gemm::swiglu_bf16<act>{{h, 64, 120, 128}, act{}}, 64, 240).code == status::ok);
}

TEST_CASE("dense epilogues: the fused NVFP4 binding refuses its output, its global encode scale and its bias", "[gemm]") {
  using act = fp4fuse::activation::swiglu;
  using epi_t = fp4fuse::gemm::swiglu_nvfp4<act>;
  using layout = fp4fuse::scale_layout::swizzled_128x4;
  auto* packed = at<std::uint8_t>(0x100000);
  auto* scales = at<std::uint8_t>(0x300000);
  const float* S = at<const float>(0x400000);
  const epi_t ok{{packed, 64, scales, layout{100, 8}}, S, act{}};
  CHECK(checked_100x256(ok).code == status::ok);
  epi_t e = ok;
  e.out.packed = nullptr;
  refused(checked_100x256(e), status::null_pointer, "swiglu_nvfp4.out.packed is null");
  e = ok;
  e.out.scales = nullptr;
  refused(checked_100x256(e), status::null_pointer, "swiglu_nvfp4.out.scales is null");
  e = ok;
  e.out.packed = packed + 4;
  refused(checked_100x256(e), status::misaligned_pointer, "swiglu_nvfp4.out.packed");
  e = ok;
  e.out.ld_packed = 60;  // below cols / 2 = 64
  refused(checked_100x256(e), status::bad_leading_dimension, "swiglu_nvfp4.out.ld_packed = 60");
  e = ok;
  e.out.ld_packed = 68;  // not a multiple of 8 (one NVFP4 block's bytes)
  refused(checked_100x256(e), status::bad_leading_dimension, "swiglu_nvfp4.out.ld_packed = 68");
  e = ok;
  e.out.layout.scale_cols = 0;
  refused(checked_100x256(e), status::bad_shape, "swiglu_nvfp4.out.layout.scale_cols = 0 must be > 0");
  e = ok;
  e.global_encode_scale = nullptr;
  refused(checked_100x256(e), status::null_pointer, "swiglu_nvfp4.global_encode_scale (S, device memory) is null");
  e = ok;
  e.global_encode_scale = at<const float>(0x400002);
  refused(checked_100x256(e), status::misaligned_pointer, "swiglu_nvfp4.global_encode_scale");
  const fp4fuse::gemm::swiglu_nvfp4<act, fp4fuse::intermediate::fp32, fp4fuse::recipe::te_exact, fp4fuse::column_bias> biased{
      ok.out, S, act{}, {nullptr, 256}};
  refused(checked_100x256(biased), status::null_pointer, "swiglu_nvfp4.bias.data is null");
  auto negative = biased;
  negative.bias = {S, -1};
  refused(checked_100x256(negative), status::bad_shape, "swiglu_nvfp4.bias.count = -1 must be even and >= 0");
  // The output's extent (rows x scale columns * 16) is M x N / 2, and N whole NVFP4 blocks of gate/up pairs.
  refused(checked(ok, 128, 256), status::bad_shape, "swiglu_nvfp4.out is [100, 128]: the GEMM writes [128, 128]");
  refused(checked(ok, 100, 512), status::bad_shape, "the GEMM writes [100, 256]");
  refused(checked(ok, 100, 240), status::not_multiple_of_block, "N = 240: swiglu_nvfp4 needs a multiple of 32");
}
