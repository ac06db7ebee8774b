// Format tags, the codec interface both formats share, and the descriptors built on them
// (quantized_matrix, matrix_view). Misuse that must not compile: tests/static_errors/cases.cu.
#include <fp4fuse/format.cuh>
#include <fp4fuse/matrix_view.cuh>
#include <fp4fuse/mxfp4.cuh>
#include <fp4fuse/nvfp4.cuh>
#include <fp4fuse/quantized_matrix.cuh>
#include <fp4fuse/scale_layout.cuh>

#include <cmath>
#include <type_traits>

#include "test_support.hpp"

namespace fmt = fp4fuse::format;
namespace recipe = fp4fuse::recipe;

static_assert(fmt::nvfp4<>::block_size == 16 && fmt::nvfp4<>::words_per_block == 2 && fmt::nvfp4<>::has_global_scale);
static_assert(fmt::mxfp4<>::block_size == 32 && fmt::mxfp4<>::words_per_block == 4 && !fmt::mxfp4<>::has_global_scale);
static_assert(std::is_same_v<fmt::nvfp4<>::recipe_type, recipe::te_exact> && std::is_same_v<fmt::mxfp4<>::recipe_type, recipe::mx_ocp>);
// One block type per format, whatever the recipe.
static_assert(std::is_same_v<fp4fuse::quantized_block<fmt::nvfp4<recipe::te_exact>>, fp4fuse::quantized_block<fmt::nvfp4<recipe::vllm>>>);
static_assert(std::is_same_v<fp4fuse::quantized_block<fmt::mxfp4<recipe::mx_ocp>>, fp4fuse::quantized_block<fmt::mxfp4<recipe::mx_round_up>>>);

namespace {

/// Written once for any format: the interface is the same for NVFP4 and MXFP4.
template <class Format>
void round_trip(const char* salt) {
  using codec_t = fp4fuse::block_codec<Format>;
  auto g = fp4fuse_test::rng(salt);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const codec_t codec = fp4fuse::make_block_codec<Format>(fp4fuse::nvfp4_global_encode_scale(40.0f));
  for (int t = 0; t < 1000; ++t) {
    float x[Format::block_size], y[Format::block_size], partial[2] = {0.0f, 0.0f};
    for (int i = 0; i < Format::block_size; ++i) {
      x[i] = n(g);
      partial[i % 2] = codec_t::combine_amax(partial[i % 2], std::fabs(x[i]));
    }
    const float amax = codec_t::block_amax(x);
    REQUIRE(amax == codec_t::combine_amax(partial[0], partial[1]));  // a reduction in any order gives the block amax
    const fp4fuse::block_scale s = codec.scale_for(amax);
    const fp4fuse::quantized_block<Format> a = codec.quantize(x), b = codec.encode(x, s);
    REQUIRE(a.scale == s.code);
    REQUIRE(std::equal(std::begin(a.packed), std::end(a.packed), std::begin(b.packed)));
    codec.dequantize(a, y);
    for (int i = 0; i < Format::block_size; ++i) {
      const float sf = codec_t::scale_value(a.scale) * codec.global_decode_scale();
      REQUIRE(std::fabs(y[i] - x[i]) <= 2.0f * sf + 1e-6f);  // within the block's largest E2M1 step
    }
  }
}

}  // namespace

TEST_CASE("block_codec: one interface for NVFP4 and MXFP4 (scale_for, encode, quantize, dequantize, amax)", "[format]") {
  round_trip<fmt::nvfp4<recipe::te_exact>>("codec te");
  round_trip<fmt::nvfp4<recipe::vllm>>("codec vllm");
  round_trip<fmt::mxfp4<recipe::mx_ocp>>("codec ocp");
  round_trip<fmt::mxfp4<recipe::mx_round_up>>("codec up");
}

TEST_CASE("quantized_matrix: rows and columns come from the layout, once", "[format]") {
  using L = fp4fuse::scale_layout::swizzled_128x4;
  const fp4fuse::quantized_matrix<fmt::nvfp4<>, L> nv{nullptr, 64, nullptr, L{300, 8}};
  CHECK(nv.rows() == 300);
  CHECK(nv.cols() == 128);
  const fp4fuse::quantized_matrix<fmt::mxfp4<>, fp4fuse::scale_layout::linear, const std::uint8_t> mx{nullptr, 64, nullptr, {7, 4}};
  CHECK(mx.rows() == 7);
  CHECK(mx.cols() == 128);
  const fp4fuse::matrix_view<const float> m{nullptr, 3, 5, 8};
  CHECK((m.rows == 3 && m.cols == 5 && m.ld == 8));
}
