// The amax kernel and the device-side global scale.
#include <fp4fuse/kernels/amax.cuh>

#include "kernel_test_support.cuh"

using namespace fp4fuse_test;

namespace {
template <class NanPolicy, class T>
void check_amax(std::int64_t rows, std::int64_t cols, std::int64_t ld, bool inject_nan, const char* salt) {
  auto g = rng(salt);
  std::vector<float> f = make_matrix(rows, cols, ld, g);
  // make_matrix puts NaN in the ld gap; replace NaN/Inf in the matrix unless asked to keep one.
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      float& v = f[static_cast<std::size_t>(r * ld + c)];
      if (!std::isfinite(v)) v = 1.0f;
    }
  if (inject_nan) f[static_cast<std::size_t>((rows / 2) * ld + cols / 3)] = NAN;
  const std::vector<T> in = to_elements<T>(f);
  float want = 0.0f;
  bool saw_nan = false;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = as_float(in[static_cast<std::size_t>(r * ld + c)]);
      if (v != v) saw_nan = true; else want = std::max(want, std::fabs(v));
    }
  if (std::is_same_v<NanPolicy, fp4fuse::nan_policy::propagate> && saw_nan) want = NAN;
  device_buffer d_in(in.size() * sizeof(T)), d_amax(4), d_S(4);
  d_in.upload(in.data(), in.size() * sizeof(T));
  const fp4fuse::result r =
      fp4fuse::amax(fp4fuse::matrix_view<const T>{d_in.as<T>(), rows, cols, ld}, d_amax.as<float>(),
                    fp4fuse::global_scale::per_tensor{d_S.as<float>()}, NanPolicy{});
  INFO(salt << " rows=" << rows << " cols=" << cols << ": " << r.message());
  REQUIRE(static_cast<bool>(r));
  FP4FUSE_TEST_LAUNCHED();
  float got = 0, S = 0;
  FP4FUSE_TEST_CUDA(cudaMemcpy(&got, d_amax.as<float>(), 4, cudaMemcpyDeviceToHost));
  FP4FUSE_TEST_CUDA(cudaMemcpy(&S, d_S.as<float>(), 4, cudaMemcpyDeviceToHost));
  if (want != want) {
    CHECK(got != got);
  } else {
    CHECK(bits_of(got) == bits_of(want));
  }
  CHECK(bits_of(S) == bits_of(fp4fuse::nvfp4_global_encode_scale(want)));
}
}  // namespace

TEST_CASE("amax [gpu]: matches the host, NaN policies, leading dimensions", "[gpu][amax]") {
  using fp4fuse::nan_policy::ignore;
  using fp4fuse::nan_policy::propagate;
  check_amax<ignore, __nv_bfloat16>(1, 8, 8, false, "amax 1");
  check_amax<ignore, __nv_bfloat16>(4097, 7168, 7168, false, "amax big");
  check_amax<ignore, __half>(33, 2048, 2056, true, "amax nan ignored");
  check_amax<propagate, __half>(33, 2048, 2056, true, "amax nan propagated");
  check_amax<propagate, float>(1000, 100, 104, false, "amax f32");
  check_amax<ignore, float>(0, 100, 104, false, "amax empty");
}
