// The standalone dequantize kernel against its host twin (block_codec<Format>::dequantize and the
// rounding to the output type), every byte checked. Argument validation: tests/detail/launch.cu.
#include <fp4fuse/kernels/dequantize.cuh>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernel_test_support.cuh"

using namespace fp4fuse_test;
namespace scale_layout = fp4fuse::scale_layout;
namespace format = fp4fuse::format;
namespace recipe = fp4fuse::recipe;

namespace {

/// Global encode scales: 1 (the E4M3 scale alone), a typical tensor's, and ones whose 1/S is not
/// a power of two (the (e2m1 * scale) * (1/S) product rounds).
const float global_scales[] = {1.0f, fp4fuse::nvfp4_global_encode_scale(3.7f), fp4fuse::nvfp4_global_encode_scale(1234.5f)};

/// Random packed bytes (every nibble value) and random scale bytes (every code, the NaN and negative
/// E4M3 codes and UE8M0's NaN 0xFF included: the kernel must agree with the codec on them too)
/// dequantized on the device and on the host; the output's ld padding stays poisoned.
template <class Format, class Layout, class T>
void check_dequantize_kernel(const char* salt) {
  constexpr int B = Format::block_size;
  auto g = rng(salt);
  for (const matrix_shape& s : kernel_shapes) {
    if (s.cols % B != 0) continue;
    for (const float S : global_scales) {
      if (!Format::has_global_scale && S != 1.0f) continue;  // MXFP4 has none
      const std::int64_t ld_out = s.cols + s.ld_extra;
      const std::int64_t ld_packed = s.cols / 2 + (s.ld_extra ? 16 : 0);
      const Layout layout{s.rows, s.cols / B};
      std::vector<unsigned char> packed(static_cast<std::size_t>(s.rows * ld_packed)), scales(static_cast<std::size_t>(layout.size_bytes()));
      for (auto& b : packed) b = static_cast<unsigned char>(g());
      for (auto& b : scales) b = static_cast<unsigned char>(g());

      device_buffer d_packed(packed.size()), d_scales(scales.size()), d_out(static_cast<std::size_t>(s.rows * ld_out) * sizeof(T)),
          d_S(sizeof(float));
      d_packed.upload(packed.data(), packed.size());
      d_scales.upload(scales.data(), scales.size());
      d_S.upload(&S, sizeof S);
      const fp4fuse::quantized_matrix<Format, Layout, const std::uint8_t> in{d_packed.as<std::uint8_t>(), ld_packed, d_scales.as<std::uint8_t>(),
                                                                           layout};
      const fp4fuse::result r =
          fp4fuse::dequantize(in, fp4fuse::matrix_view<T>{d_out.as<T>(), s.rows, s.cols, ld_out}, tensor_scale<Format>(d_S.as<float>()));
      INFO(salt << " " << type_name<T>() << " M=" << s.rows << " K=" << s.cols << " ld=" << ld_out << " S=" << S << ": " << r.message());
      REQUIRE(static_cast<bool>(r));
      FP4FUSE_TEST_LAUNCHED();

      const auto codec = fp4fuse::make_block_codec<Format>(S);
      std::vector<unsigned char> want(d_out.bytes(), poison);
      for (std::int64_t row = 0; row < s.rows; ++row) {
        for (std::int64_t b = 0; b < s.cols / B; ++b) {
          fp4fuse::quantized_block<Format> qb{};
          std::memcpy(qb.packed, &packed[static_cast<std::size_t>(row * ld_packed + b * B / 2)], sizeof qb.packed);
          qb.scale = scales[static_cast<std::size_t>(layout.offset(row, b))];
          float y[B];
          codec.dequantize(qb, y);
          for (int i = 0; i < B; ++i) {
            const T v = fp4fuse::detail::from_float<T>(y[i]);
            std::memcpy(&want[static_cast<std::size_t>(row * ld_out + b * B + i) * sizeof(T)], &v, sizeof(T));
          }
        }
      }
      CHECK(same_elements_nan_equal<T>(d_out.download(), want) == 0);
      CHECK(d_out.guard_intact());
      CHECK(d_packed.download() == packed);  // the inputs are read only
      CHECK(d_scales.download() == scales);
    }
  }
}

/// The stated numerics from first principles: E2M1 from its table, E4M3 (s eeee mmm, bias 7,
/// 0x7F/0xFF NaN) and UE8M0 (2^(e - 127), 0xFF NaN) from their fields, the products exact in
/// double and rounded once to float (what one fp32 multiply does).
float e2m1_value(unsigned nibble) {
  static const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (nibble & 8u) ? -magnitude[nibble & 7u] : magnitude[nibble & 7u];
}
double e4m3_value(unsigned code) {
  const unsigned e = (code >> 3) & 15u, m = code & 7u;
  if (e == 15u && m == 7u) return std::numeric_limits<double>::quiet_NaN();
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, static_cast<int>(e) - 7);
  return (code & 0x80u) ? -v : v;
}
double ue8m0_value(unsigned code) { return code == 255u ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(code) - 127); }

/// Every nibble at every scale byte of a block (nibble i of block j: (i + j) % 16), against the
/// formula.
template <class Format>
void check_block_formula(float S) {
  constexpr int B = Format::block_size;
  const auto codec = fp4fuse::make_block_codec<Format>(S);
  const float inv_S = 1.0f / S;  // IEEE division, as the codec's global decode scale
  for (unsigned code = 0; code < 256; ++code) {
    fp4fuse::quantized_block<Format> qb{};
    for (int i = 0; i < B; ++i) qb.packed[i / 8] |= static_cast<std::uint32_t>((i + code) % 16) << (4 * (i % 8));
    qb.scale = static_cast<std::uint8_t>(code);
    float y[B];
    codec.dequantize(qb, y);
    for (int i = 0; i < B; ++i) {
      const double v = e2m1_value((i + code) % 16);
      const float want = Format::has_global_scale ? static_cast<float>(static_cast<double>(static_cast<float>(v * e4m3_value(code))) * inv_S)
                                                  : static_cast<float>(v * ue8m0_value(code));
      INFO("scale byte " << code << " element " << i << " S " << S << ": " << y[i] << " vs " << want);
      CHECK((std::memcmp(&y[i], &want, 4) == 0 || (std::isnan(y[i]) && std::isnan(want))));
    }
  }
}

}  // namespace

TEST_CASE("dequantize on the host: the block codec's dequantize is (e2m1 * scale) * (1/S) (NVFP4), e2m1 * 2^(e - 127) (MXFP4)",
          "[dequantize]") {
  for (const float S : global_scales) {
    check_block_formula<format::nvfp4<>>(S);
    check_block_formula<format::nvfp4<recipe::vllm>>(S);
  }
  check_block_formula<format::mxfp4<recipe::mx_ocp>>(1.0f);
  check_block_formula<format::mxfp4<recipe::mx_round_up>>(1.0f);
}

TEST_CASE("dequantize [gpu]: NVFP4, every output type and layout, every packed and scale byte value, bit-exact", "[gpu][dequantize]") {
  check_dequantize_kernel<format::nvfp4<>, scale_layout::swizzled_128x4, __nv_bfloat16>("dq nv sw bf16");
  check_dequantize_kernel<format::nvfp4<>, scale_layout::linear, __nv_bfloat16>("dq nv lin bf16");
  check_dequantize_kernel<format::nvfp4<>, scale_layout::swizzled_128x4, __half>("dq nv sw f16");
  check_dequantize_kernel<format::nvfp4<>, scale_layout::linear, float>("dq nv lin f32");
  check_dequantize_kernel<format::nvfp4<recipe::vllm>, scale_layout::swizzled_128x4, float>("dq nv vllm sw f32");
}

TEST_CASE("dequantize [gpu]: MXFP4 both recipes, every packed and scale byte value, bit-exact", "[gpu][dequantize]") {
  check_dequantize_kernel<format::mxfp4<recipe::mx_ocp>, scale_layout::linear, __nv_bfloat16>("dq mx lin bf16");
  check_dequantize_kernel<format::mxfp4<recipe::mx_ocp>, scale_layout::swizzled_128x4, __half>("dq mx sw f16");
  check_dequantize_kernel<format::mxfp4<recipe::mx_round_up>, scale_layout::swizzled_128x4, float>("dq mx up sw f32");
}
