// launch.cuh's public helpers on the host, as a consumer's launcher uses them: argument_checker
// records the first failure only, with the entry point, the argument's name and the requirement in
// its sentence, and chains; matrix(), quantized() and scale() refuse each bad field with its
// status; is_aligned; cuda_failure maps each CUDA error to the status a launcher reports. (Every
// library launcher's refusals: tests/detail/launch.cu.)
#include <fp4fuse/launch.cuh>
#include <fp4fuse/scale_layout.cuh>

#include <string>

#include "test_support.hpp"

using fp4fuse::status;

namespace {

const void* fake(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

bool says(const fp4fuse::result& r, const char* part) { return std::string(r.message()).find(part) != std::string::npos; }

}  // namespace

TEST_CASE("is_aligned: the address modulo the alignment", "[launch]") {
  CHECK(fp4fuse::is_aligned(fake(0x1000), 16));
  CHECK(fp4fuse::is_aligned(fake(0x1008), 8));
  CHECK(!fp4fuse::is_aligned(fake(0x1008), 16));
  CHECK(fp4fuse::is_aligned(nullptr, 256));
}

TEST_CASE("argument_checker: the first failure is kept, with the entry point, the name and the requirement", "[launch]") {
  fp4fuse::argument_checker c("my_launcher");
  CHECK(static_cast<bool>(c));
  CHECK(static_cast<bool>(c.outcome()));
  c.not_null(fake(0x100), "a").aligned(fake(0x104), 4, "a", "floats");  // both pass
  CHECK(static_cast<bool>(c));
  c.aligned(fake(0x102), 4, "b", "floats").not_null(nullptr, "c");  // the first failure wins
  CHECK(!c);
  CHECK(c.outcome().code == status::misaligned_pointer);
  CHECK(says(c.outcome(), "my_launcher: b ("));
  CHECK(says(c.outcome(), "must be 4-byte aligned (floats)"));
  CHECK(!says(c.outcome(), "c is null"));
  fp4fuse::argument_checker n("my_launcher");
  CHECK(n.not_null(nullptr, "d_amax").outcome().code == status::null_pointer);
  CHECK(std::string(n.outcome().message()) == "my_launcher: d_amax is null");
  CHECK(static_cast<bool>(fp4fuse::argument_checker("x").aligned(nullptr, 16, "p", "why")));  // null passes aligned()
  fp4fuse::argument_checker r("my_launcher");
  r.require(false, status::bad_shape, "experts = %d must be > 0", 0);
  CHECK(std::string(r.outcome().message()) == "my_launcher: experts = 0 must be > 0");
  const std::string long_sentence(500, 's');
  fp4fuse::argument_checker cut("e");
  cut.require(false, status::bad_shape, "%s", long_sentence.c_str());
  CHECK(std::string(cut.outcome().message()) == "e: " + long_sentence.substr(0, 199));  // the sentence cut at 199 characters
}

TEST_CASE("argument_checker::matrix, quantized and scale: each bad field with its status and name", "[launch]") {
  using bf16 = __nv_bfloat16;
  const auto* x = static_cast<const bf16*>(fake(0x10000));
  const auto matrix = [](const fp4fuse::matrix_view<const bf16>& m) {
    fp4fuse::argument_checker c("L");
    return c.matrix(m, "x", 16, 16, "NVFP4 blocks").outcome();
  };
  CHECK(static_cast<bool>(matrix({x, 4, 32, 32})));
  CHECK(static_cast<bool>(matrix({x, 0, 32, 32})));  // no rows: valid
  CHECK(matrix({nullptr, 4, 32, 32}).code == status::null_pointer);
  CHECK(says(matrix({nullptr, 4, 32, 32}), "L: x.data is null"));
  CHECK(matrix({x + 1, 4, 32, 32}).code == status::misaligned_pointer);
  CHECK(matrix({x, -1, 32, 32}).code == status::bad_shape);
  CHECK(matrix({x, 4, 8, 8}).code == status::bad_shape);  // below min_cols
  CHECK(matrix({x, 4, 24, 24}).code == status::not_multiple_of_block);
  CHECK(says(matrix({x, 4, 24, 24}), "x.cols = 24 must be a multiple of 16 (NVFP4 blocks)"));
  CHECK(matrix({x, 4, 32, 16}).code == status::bad_leading_dimension);
  CHECK(matrix({x, 4, 32, 36}).code == status::bad_leading_dimension);  // not a whole number of 16-byte vectors
  // 2^31 columns or more: a kernel's column offset (block index x block size, 32-bit) would wrap
  // (K = 2^32 + 16 made block 2^28 write block 0's elements before this bound).
  const std::int64_t wide = (std::int64_t{1} << 32) + 16;
  CHECK(says(matrix({x, 1, wide, wide}), "x.cols = 4294967312 must be below 2147483648 (the kernel's 32-bit column offsets)"));
  {  // a kernel with 64-bit column offsets (amax) passes no_column_limit
    fp4fuse::argument_checker c("L");
    CHECK(static_cast<bool>(c.matrix(fp4fuse::matrix_view<const bf16>{x, 1, wide, wide}, "x", 16, 16, "NVFP4 blocks",
                                     fp4fuse::argument_checker::no_column_limit)));
  }
  CHECK(matrix({x, 1, (std::int64_t{1} << 31) - 16, std::int64_t{1} << 31}).code == status::ok);
  CHECK(matrix({x, 1, std::int64_t{1} << 31, std::int64_t{1} << 31}).code == status::bad_shape);
  using F = fp4fuse::format::nvfp4<>;
  using L = fp4fuse::scale_layout::swizzled_128x4;
  auto* packed = static_cast<std::uint8_t*>(const_cast<void*>(fake(0x20000)));
  auto* scales = static_cast<std::uint8_t*>(const_cast<void*>(fake(0x30000)));
  const auto quantized = [](const fp4fuse::quantized_matrix<F, L>& q) {
    fp4fuse::argument_checker c("L");
    return c.quantized(q, "out").outcome();
  };
  CHECK(static_cast<bool>(quantized({packed, 16, scales, L{4, 2}})));
  CHECK(says(quantized({nullptr, 16, scales, L{4, 2}}), "L: out.packed is null"));
  CHECK(quantized({packed + 4, 16, scales, L{4, 2}}).code == status::misaligned_pointer);
  CHECK(says(quantized({packed, 16, nullptr, L{4, 2}}), "L: out.scales is null"));
  CHECK(quantized({packed, 16, scales, L{-1, 2}}).code == status::bad_shape);
  CHECK(quantized({packed, 16, scales, L{4, 0}}).code == status::bad_shape);
  CHECK(quantized({packed, 8, scales, L{4, 2}}).code == status::bad_leading_dimension);   // below cols / 2 = 16 bytes
  CHECK(quantized({packed, 20, scales, L{4, 2}}).code == status::bad_leading_dimension);  // not whole 8-byte blocks
  CHECK(says(quantized({packed, std::int64_t{1} << 31, scales, L{1, std::int64_t{1} << 28}}), "out has 4294967296 columns: below 2^31 is needed"));
  CHECK(static_cast<bool>(quantized({packed, std::int64_t{1} << 30, scales, L{1, (std::int64_t{1} << 27) - 1}})));  // 2^31 - 16 columns
  fp4fuse::argument_checker s("L");
  CHECK(static_cast<bool>(s.scale(fp4fuse::global_scale::none{})));
  CHECK(s.scale(fp4fuse::global_scale::per_tensor{nullptr}).outcome().code == status::null_pointer);
  fp4fuse::argument_checker s2("L");
  CHECK(s2.scale(fp4fuse::global_scale::per_tensor{static_cast<const float*>(fake(0x40002))}).outcome().code == status::misaligned_pointer);
}

TEST_CASE("cuda_failure: a missing device or driver is no_device, a missing image unsupported_architecture, anything else cuda_error", "[launch]") {
  const auto f = [](cudaError_t e) { return fp4fuse::cuda_failure(e, "my_launcher"); };
  CHECK(f(cudaErrorNoDevice).code == status::no_device);
  CHECK(f(cudaErrorDevicesUnavailable).code == status::no_device);
  CHECK(f(cudaErrorInsufficientDriver).code == status::no_device);
  CHECK(says(f(cudaErrorInsufficientDriver), "my_launcher: no usable CUDA device ("));
  CHECK(f(cudaErrorNoKernelImageForDevice).code == status::unsupported_architecture);
  CHECK(f(cudaErrorInvalidDeviceFunction).code == status::unsupported_architecture);
  CHECK(says(f(cudaErrorNoKernelImageForDevice), "add its -gencode target"));
  const fp4fuse::result other = f(cudaErrorInvalidValue);
  CHECK(other.code == status::cuda_error);
  CHECK(other.cuda == cudaErrorInvalidValue);
  CHECK(std::string(other.message()) == std::string("my_launcher: ") + cudaGetErrorString(cudaErrorInvalidValue));
  CHECK(f(cudaErrorNoDevice).cuda == cudaErrorNoDevice);
}
