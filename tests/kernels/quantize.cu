// The standalone quantize kernel against its host twin, every byte checked (the dequantize
// kernel: tests/kernels/dequantize.cu). Argument validation of every launcher: tests/detail/launch.cu.
#include <fp4fuse/kernels/quantize.cuh>

#include <algorithm>
#include <string>

#include "../block_generators.hpp"
#include "kernel_test_support.cuh"

using namespace fp4fuse_test;
namespace scale_layout = fp4fuse::scale_layout;
namespace format = fp4fuse::format;
namespace recipe = fp4fuse::recipe;

namespace {

/// Host twin of one quantize call: packed bytes (poisoned where the kernel must not write) and the
/// full scale tensor (0x00 padding).
template <class Format, class Layout, class T>
void host_quantize(const std::vector<T>& in, const matrix_shape& s, std::int64_t ld_in, std::int64_t ld_out, float S,
                   std::vector<unsigned char>& packed, std::vector<unsigned char>& scales) {
  constexpr int B = Format::block_size;
  const Layout layout{s.rows, s.cols / B};
  packed.assign(static_cast<std::size_t>(s.rows * ld_out), poison);
  scales.assign(static_cast<std::size_t>(layout.size_bytes()), 0x00);
  const auto codec = fp4fuse::make_block_codec<Format>(S);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t b = 0; b < s.cols / B; ++b) {
      float x[B];
      for (int i = 0; i < B; ++i) x[i] = as_float(in[static_cast<std::size_t>(r * ld_in + b * B + i)]);
      const fp4fuse::quantized_block<Format> q = codec.quantize(x);
      scales[static_cast<std::size_t>(layout.offset(r, b))] = q.scale;
      std::memcpy(&packed[static_cast<std::size_t>(r * ld_out + b * B / 2)], q.packed, sizeof q.packed);
    }
  }
}

template <class Format, class Layout, class T>
void check_quantize_kernel(const char* salt) {
  constexpr int B = Format::block_size;
  auto g = rng(salt);
  for (const matrix_shape& s : kernel_shapes) {
    if (s.cols % B != 0) continue;
    const std::int64_t ld_in = s.cols + s.ld_extra;
    const std::int64_t ld_out = s.cols / 2 + (s.ld_extra ? 16 : 0);
    const std::vector<float> f = make_matrix(s.rows, s.cols, ld_in, g);
    const std::vector<T> in = to_elements<T>(f);
    float tensor_amax = 0.0f;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (static_cast<std::int64_t>(i % ld_in) < s.cols && std::isfinite(as_float(in[i]))) tensor_amax = std::max(tensor_amax, std::fabs(as_float(in[i])));
    }
    const float S = fp4fuse::nvfp4_global_encode_scale(tensor_amax);
    const Layout layout{s.rows, s.cols / B};

    device_buffer d_in(in.size() * sizeof(T)), d_out(static_cast<std::size_t>(s.rows * ld_out)),
        d_scales(static_cast<std::size_t>(layout.size_bytes())), d_S(sizeof(float));
    d_in.upload(in.data(), in.size() * sizeof(T));
    d_S.upload(&S, sizeof S);
    const fp4fuse::matrix_view<const T> in_view{d_in.as<T>(), s.rows, s.cols, ld_in};
    const fp4fuse::quantized_matrix<Format, Layout> out_view{d_out.as<std::uint8_t>(), ld_out, d_scales.as<std::uint8_t>(), layout};
    const fp4fuse::result r = fp4fuse::quantize(in_view, out_view, tensor_scale<Format>(d_S.as<float>()));
    INFO(salt << " " << type_name<T>() << " M=" << s.rows << " K=" << s.cols << " ld=" << ld_in << ": " << r.message());
    REQUIRE(static_cast<bool>(r));
    FP4FUSE_TEST_LAUNCHED();

    std::vector<unsigned char> want_packed, want_scales;
    host_quantize<Format, Layout>(in, s, ld_in, ld_out, S, want_packed, want_scales);
    CHECK(d_out.download() == want_packed);  // ld padding bytes stay poisoned
    CHECK(d_scales.download() == want_scales);  // padding scales are 0x00
    CHECK(d_out.guard_intact());
    CHECK(d_scales.guard_intact());
  }
}

}  // namespace

namespace {

/// [rows, cols] floats (NaN beyond cols) of the codec tests' adversarial blocks
/// (tests/block_generators.hpp: subnormals, underflow, +-0, ties, one huge value, NaN, Inf, mixed
/// specials): even rows draw a kind per block, so the lanes of a warp disagree about the encoder
/// path (fast, clamped, codec fallback); odd rows keep one kind for the whole row, so whole warps
/// take the same path (the unclamped one included).
template <int B>
std::vector<float> adversarial_matrix(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::mt19937_64& g) {
  constexpr auto kinds = static_cast<std::uint64_t>(block_kind::count);
  std::vector<float> m(static_cast<std::size_t>(rows * ld), std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto row_kind = static_cast<block_kind>(static_cast<std::uint64_t>(r / 2) % kinds);
    for (std::int64_t b = 0; b < cols / B; ++b) {
      float x[B];
      fill_block(r % 2 == 0 ? static_cast<block_kind>(g() % kinds) : row_kind, g, x);
      std::copy(x, x + B, &m[static_cast<std::size_t>(r * ld + b * B)]);
    }
  }
  return m;
}

/// Which path of detail::quantize_block_fast each block of `in` takes with global scale S, counted
/// on the host with the codec's own scale: a non-finite value (the codec's quantize), fl(amax *
/// multiplier) below 7 (the unclamped encoder when its whole vote group agrees; `above_6` counts
/// those in (6, 7), beyond E2M1's largest value), at or above 7 (the clamped one); and groups of 32 consecutive blocks of a row (one warp's vote) that are all below
/// 7, or that mix below and above.
struct path_counts {
  std::size_t nonfinite = 0, below_7 = 0, above_6 = 0, clamped = 0, uniform_groups = 0, mixed_groups = 0;
};
template <class Format, class T>
void count_paths(const std::vector<T>& in, std::int64_t rows, std::int64_t cols, std::int64_t ld, float S, path_counts& n) {
  constexpr int B = Format::block_size;
  const auto codec = fp4fuse::make_block_codec<Format>(S);
  for (std::int64_t r = 0; r < rows; ++r) {
    int group_below = 0, group_above = 0;
    for (std::int64_t b = 0; b < cols / B; ++b) {
      float x[B];
      bool finite = true;
      for (int i = 0; i < B; ++i) {
        x[i] = as_float(in[static_cast<std::size_t>(r * ld + b * B + i)]);
        finite = finite && std::isfinite(x[i]);
      }
      if (!finite) {
        ++n.nonfinite;
      } else {
        const float amax = fp4fuse::block_codec<Format>::block_amax(x);
        const float top = amax * codec.scale_for(amax).multiplier;
        const bool below = Format::has_global_scale && top < 7.0f;
        n.above_6 += below && top > 6.0f;
        ++(below ? n.below_7 : n.clamped);
        ++(below ? group_below : group_above);
      }
      if (b % 32 == 31 || b + 1 == cols / B) {
        n.uniform_groups += group_below > 0 && group_above == 0;
        n.mixed_groups += group_below > 0 && group_above > 0;
        group_below = group_above = 0;
      }
    }
  }
}

/// The tiled quantize kernel on adversarial blocks, per tensor, at several global scales (1, the
/// tensor's, and extremes that saturate or underflow the block scales): every byte against the host
/// codec. The last shape has more than 2^20 blocks, so the launcher takes its wide form (two blocks
/// per thread for 16-bit inputs and NVFP4 float), with a ragged last tile in every row.
template <class Format, class Layout, class T>
void check_quantize_adversarial(const char* salt) {
  constexpr int B = Format::block_size;
  auto g = rng(salt);
  const matrix_shape adversarial_shapes[] = {{3, 48 * B / 16, 0}, {130, 80 * B / 16, 16}, {257, 2064 * B / 16, 8}, {2049, 8208 * 2 * B / 32, 0}};
  path_counts paths;
  for (const matrix_shape& s : adversarial_shapes) {
    const std::int64_t ld_in = s.cols + s.ld_extra;
    const std::int64_t ld_out = s.cols / 2 + (s.ld_extra ? 16 : 0);
    const std::vector<T> in = to_elements<T>(adversarial_matrix<B>(s.rows, s.cols, ld_in, g));
    float tensor_amax = 0.0f;
    for (std::int64_t r = 0; r < s.rows; ++r) {
      for (std::int64_t c = 0; c < s.cols; ++c) {
        const float v = std::fabs(as_float(in[static_cast<std::size_t>(r * ld_in + c)]));
        if (std::isfinite(v)) tensor_amax = std::max(tensor_amax, v);
      }
    }
    const Layout layout{s.rows, s.cols / B};
    const bool large = s.rows > 1000;
    std::vector<float> scales_to_test = {1.0f};
    if (Format::has_global_scale) {
      scales_to_test.push_back(fp4fuse::nvfp4_global_encode_scale(tensor_amax));
      if (!large) scales_to_test.insert(scales_to_test.end(), {3.0e38f, 1e-30f, 2688.0f});
    }
    device_buffer d_in(in.size() * sizeof(T)), d_out(static_cast<std::size_t>(s.rows * ld_out)),
        d_scales(static_cast<std::size_t>(layout.size_bytes())), d_S(sizeof(float));
    d_in.upload(in.data(), in.size() * sizeof(T));
    for (const float S : scales_to_test) {
      d_S.upload(&S, sizeof S);
      // Poisoned again for each call: a byte the kernel skips cannot keep the previous call's value.
      FP4FUSE_TEST_CUDA(cudaMemset(d_out.as<void>(), poison, d_out.bytes()));
      FP4FUSE_TEST_CUDA(cudaMemset(d_scales.as<void>(), poison, d_scales.bytes()));
      const fp4fuse::result r = fp4fuse::quantize(fp4fuse::matrix_view<const T>{d_in.as<T>(), s.rows, s.cols, ld_in},
                                                  fp4fuse::quantized_matrix<Format, Layout>{d_out.as<std::uint8_t>(), ld_out, d_scales.as<std::uint8_t>(), layout},
                                                  tensor_scale<Format>(d_S.as<float>()));
      INFO(salt << " " << type_name<T>() << " M=" << s.rows << " K=" << s.cols << " S=" << S << ": " << r.message());
      REQUIRE(static_cast<bool>(r));
      FP4FUSE_TEST_LAUNCHED();
      std::vector<unsigned char> want_packed, want_scales;
      host_quantize<Format, Layout>(in, s, ld_in, ld_out, S, want_packed, want_scales);
      CHECK(d_out.download() == want_packed);
      CHECK(d_scales.download() == want_scales);
      CHECK(d_out.guard_intact());
      CHECK(d_scales.guard_intact());
      count_paths<Format>(in, s.rows, s.cols, ld_in, S, paths);
    }
  }
  // The data reaches every path of the encoder, or the test above proves less than it says.
  INFO(salt << ": blocks non-finite " << paths.nonfinite << ", below 7 " << paths.below_7 << " (in (6, 7) " << paths.above_6 << "), clamped " << paths.clamped
            << "; vote groups all below 7 " << paths.uniform_groups << ", mixed " << paths.mixed_groups);
  CHECK(paths.nonfinite > 0);
  CHECK(paths.clamped > 0);
  if (Format::has_global_scale) {
    CHECK(paths.below_7 > 0);
    CHECK(paths.above_6 > 0);
    CHECK(paths.uniform_groups > 0);
    CHECK(paths.mixed_groups > 0);
  }
}

}  // namespace

TEST_CASE("quantize: the adversarial matrices reach every path of the fast block encoder (host count)", "[quantize]") {
  auto g = rng("adv paths");
  const std::int64_t rows = 130, cols = 2064;
  const std::vector<__nv_bfloat16> in = to_elements<__nv_bfloat16>(adversarial_matrix<16>(rows, cols, cols, g));
  path_counts n;
  for (const float S : {1.0f, 2688.0f, 3.0e38f, 1e-30f}) count_paths<format::nvfp4<>>(in, rows, cols, cols, S, n);
  INFO("blocks non-finite " << n.nonfinite << ", below 7 " << n.below_7 << " (in (6, 7) " << n.above_6 << "), clamped " << n.clamped << "; vote groups all below 7 "
                            << n.uniform_groups << ", mixed " << n.mixed_groups);
  CHECK(n.nonfinite > 0);
  CHECK(n.below_7 > 0);
  CHECK(n.above_6 > 0);
  CHECK(n.clamped > 0);
  CHECK(n.uniform_groups > 0);
  CHECK(n.mixed_groups > 0);
  path_counts mx;
  count_paths<format::mxfp4<>>(in, rows, cols, cols, 1.0f, mx);
  CHECK(mx.below_7 == 0);  // MXFP4 always takes the clamped encoder
  CHECK(mx.clamped > 0);
}

TEST_CASE("quantize [gpu]: adversarial blocks (subnormal, +-0, ties, NaN, Inf, saturating), mixed within warps, every global scale "
          "regime, and the wide (2^20+ blocks) launch: bit-exact",
          "[gpu][quantize]") {
  check_quantize_adversarial<format::nvfp4<>, scale_layout::swizzled_128x4, __nv_bfloat16>("adv nv sw bf16");
  check_quantize_adversarial<format::nvfp4<>, scale_layout::linear, __half>("adv nv lin f16");
  check_quantize_adversarial<format::nvfp4<>, scale_layout::swizzled_128x4, float>("adv nv sw f32");
  check_quantize_adversarial<format::mxfp4<recipe::mx_ocp>, scale_layout::linear, __nv_bfloat16>("adv mx lin bf16");
  check_quantize_adversarial<format::mxfp4<recipe::mx_round_up>, scale_layout::swizzled_128x4, float>("adv mx up sw f32");
}

TEST_CASE("quantize [gpu]: NVFP4 te_exact, every dtype and layout, bit-exact with every byte checked", "[gpu][quantize]") {
  check_quantize_kernel<format::nvfp4<>, scale_layout::swizzled_128x4, __nv_bfloat16>("q nv sw bf16");
  check_quantize_kernel<format::nvfp4<>, scale_layout::linear, __nv_bfloat16>("q nv lin bf16");
  check_quantize_kernel<format::nvfp4<>, scale_layout::swizzled_128x4, __half>("q nv sw f16");
  check_quantize_kernel<format::nvfp4<>, scale_layout::linear, float>("q nv lin f32");
  check_quantize_kernel<format::nvfp4<>, scale_layout::swizzled_128x4, float>("q nv sw f32");
}

TEST_CASE("quantize [gpu]: MXFP4 both recipes, bit-exact with every byte checked", "[gpu][quantize]") {
  check_quantize_kernel<format::mxfp4<recipe::mx_ocp>, scale_layout::linear, __nv_bfloat16>("q mx lin bf16");
  check_quantize_kernel<format::mxfp4<recipe::mx_ocp>, scale_layout::swizzled_128x4, __half>("q mx sw f16");
  check_quantize_kernel<format::mxfp4<recipe::mx_round_up>, scale_layout::swizzled_128x4, float>("q mx up sw f32");
}

namespace {

/// Reference for the kernel plumbing: one thread per block calling the library's block codec on
/// the device directly (its own agreement with the host is tested in tests/nvfp4.cu).
template <class Format, class Layout>
__global__ void reference_quantize_kernel(const __nv_bfloat16* in, std::int64_t rows, std::int64_t blocks, std::int64_t ld,
                                          std::uint8_t* out, std::uint8_t* scales, const float* S, Layout layout, bool S_per_row = false) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows * blocks) return;
  const std::int64_t r = i / blocks, b = i % blocks;
  float x[16];
  for (int j = 0; j < 16; ++j) x[j] = __bfloat162float(in[r * ld + b * 16 + j]);
  const fp4fuse::quantized_block<Format> q = fp4fuse::make_block_codec<Format>(S[S_per_row ? r : 0]).quantize(x);
  scales[layout.offset(r, b)] = q.scale;
  reinterpret_cast<uint2*>(out + r * (blocks * 8))[b] = make_uint2(q.packed[0], q.packed[1]);
}

}  // namespace

TEST_CASE("quantize [gpu]: NVFP4 vllm recipe through the kernel equals the device block codec; scales equal the host's",
          "[gpu][quantize]") {
  using F = format::nvfp4<recipe::vllm>;
  using L = scale_layout::swizzled_128x4;
  auto g = rng("q vllm");
  for (const matrix_shape& s : kernel_shapes) {
    const std::int64_t ld = s.cols + s.ld_extra, blocks = s.cols / 16;
    const std::vector<__nv_bfloat16> in = to_elements<__nv_bfloat16>(make_matrix(s.rows, s.cols, ld, g));
    for (float S : {fp4fuse::nvfp4_global_encode_scale(1000.0f), 3.0e38f, 1e-30f}) {
      const L layout{s.rows, blocks};
      device_buffer d_in(in.size() * 2), d_S(4), out(static_cast<std::size_t>(s.rows * blocks * 8)),
          ref(static_cast<std::size_t>(s.rows * blocks * 8)), sc(static_cast<std::size_t>(layout.size_bytes())),
          ref_sc(static_cast<std::size_t>(layout.size_bytes()));
      d_in.upload(in.data(), in.size() * 2);
      d_S.upload(&S, 4);
      FP4FUSE_TEST_CUDA(cudaMemset(ref_sc.as<void>(), 0, static_cast<std::size_t>(layout.size_bytes())));
      REQUIRE(static_cast<bool>(fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{d_in.as<__nv_bfloat16>(), s.rows, s.cols, ld},
                                                   fp4fuse::quantized_matrix<F, L>{out.as<std::uint8_t>(), blocks * 8, sc.as<std::uint8_t>(), layout},
                                                   fp4fuse::global_scale::per_tensor{d_S.as<float>()})));
      reference_quantize_kernel<F, L><<<static_cast<unsigned>((s.rows * blocks + 127) / 128), 128>>>(
          d_in.as<__nv_bfloat16>(), s.rows, blocks, ld, ref.as<std::uint8_t>(), ref_sc.as<std::uint8_t>(), d_S.as<float>(), layout);
      FP4FUSE_TEST_LAUNCHED();
      INFO("M=" << s.rows << " K=" << s.cols << " S=" << S);
      CHECK(out.download() == ref.download());
      const std::vector<unsigned char> got_scales = sc.download();
      CHECK(got_scales == ref_sc.download());
      // Block scales do not involve rcp(S), so the host computes the same bytes.
      const fp4fuse::block_codec<F> host(S);
      std::size_t scale_bad = 0;
      for (std::int64_t r = 0; r < s.rows; ++r) {
        for (std::int64_t b = 0; b < blocks; ++b) {
          float x[16];
          for (int j = 0; j < 16; ++j) x[j] = as_float(in[static_cast<std::size_t>(r * ld + b * 16 + j)]);
          scale_bad += got_scales[static_cast<std::size_t>(layout.offset(r, b))] != host.scale_for(host.block_amax(x)).code;
        }
      }
      CHECK(scale_bad == 0);
    }
  }
}

namespace {

/// Host twin of the per-row quantize: S_r from each row's amax (NaN ignored), the blocks with it.
template <class Format, class Layout, class T>
void host_quantize_per_row(const std::vector<T>& in, std::int64_t rows, std::int64_t cols, std::int64_t ld_in, std::int64_t ld_out,
                           std::vector<unsigned char>& packed, std::vector<unsigned char>& scales, std::vector<float>& row_S) {
  constexpr int B = Format::block_size;
  const Layout layout{rows, cols / B};
  packed.assign(static_cast<std::size_t>(rows * ld_out), poison);
  scales.assign(static_cast<std::size_t>(layout.size_bytes()), 0x00);
  row_S.assign(static_cast<std::size_t>(rows), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = std::fabs(as_float(in[static_cast<std::size_t>(r * ld_in + c)]));
      if (!std::isnan(v)) amax = std::max(amax, v);
    }
    const float S = fp4fuse::nvfp4_global_encode_scale(amax);
    row_S[static_cast<std::size_t>(r)] = S;
    const auto codec = fp4fuse::make_block_codec<Format>(S);
    for (std::int64_t b = 0; b < cols / B; ++b) {
      float x[B];
      for (int i = 0; i < B; ++i) x[i] = as_float(in[static_cast<std::size_t>(r * ld_in + b * B + i)]);
      const auto q = codec.quantize(x);
      scales[static_cast<std::size_t>(layout.offset(r, b))] = q.scale;
      std::memcpy(&packed[static_cast<std::size_t>(r * ld_out + b * B / 2)], q.packed, sizeof q.packed);
    }
  }
}

template <class Format, class Layout, class T>
void check_quantize_per_row(const char* salt) {
  auto g = rng(salt);
  // CTAs of 64, 128 and 256 threads (row_threads_for) for each element type: the one-pass kernel
  // holds 16-bit rows up to 1024 blocks (16336 = 1021 blocks, ragged), float rows up to 512; longer
  // rows take the two-pass path (float from 8208 = 513 blocks; 16400 = 1025 blocks, padded to 1028
  // in swizzled_128x4; 32768 = 2048 blocks over a ragged 37 rows).
  const matrix_shape row_shapes[] = {{1, 16, 0},    {3, 48, 0},     {130, 80, 16},   {257, 272, 0}, {129, 2064, 24},
                              {64, 7168, 0}, {5, 8192, 8},   {3, 8208, 0},    {3, 16336, 8}, {5, 16400, 8},
                              {37, 32768, 0}, {2, 32768, 24}};
  for (const bool adversarial : {false, true})
  for (const matrix_shape& s : row_shapes) {
    const std::int64_t ld_in = s.cols + s.ld_extra;
    const std::int64_t ld_out = s.cols / 2 + (s.ld_extra ? 16 : 0);
    // Rows of different magnitudes (2^-20 .. 2^20): each row's scale differs from the tensor's;
    // adversarial rows add rows of subnormals (S_r clamped to FLT_MAX), of zeros (S_r = 1), with
    // Inf (S_r = 1) and with NaN (ignored by the row amax).
    const std::vector<T> in =
        to_elements<T>(adversarial ? adversarial_matrix<16>(s.rows, s.cols, ld_in, g) : make_matrix(s.rows, s.cols, ld_in, g));
    const Layout layout{s.rows, s.cols / 16};
    device_buffer d_in(in.size() * sizeof(T)), d_out(static_cast<std::size_t>(s.rows * ld_out)),
        d_scales(static_cast<std::size_t>(layout.size_bytes())), d_rs(static_cast<std::size_t>(s.rows) * 4);
    d_in.upload(in.data(), in.size() * sizeof(T));
    const fp4fuse::result r = fp4fuse::quantize(fp4fuse::matrix_view<const T>{d_in.as<T>(), s.rows, s.cols, ld_in},
                                                fp4fuse::quantized_matrix<Format, Layout>{d_out.as<std::uint8_t>(), ld_out, d_scales.as<std::uint8_t>(), layout},
                                                fp4fuse::global_scale::per_row{d_rs.as<float>()});
    INFO(salt << " " << type_name<T>() << (adversarial ? " adversarial" : "") << " M=" << s.rows << " K=" << s.cols << ": " << r.message());
    REQUIRE(static_cast<bool>(r));
    FP4FUSE_TEST_LAUNCHED();
    std::vector<unsigned char> want_packed, want_scales;
    std::vector<float> want_S;
    host_quantize_per_row<Format, Layout>(in, s.rows, s.cols, ld_in, ld_out, want_packed, want_scales, want_S);
    check_row_scaled_outputs(d_out, want_packed, d_scales, want_scales, d_rs, want_S);
  }
}

}  // namespace

TEST_CASE("quantize [gpu]: per-row global scales equal the host composition, every byte and every row scale checked",
          "[gpu][quantize]") {
  check_quantize_per_row<format::nvfp4<>, scale_layout::swizzled_128x4, __nv_bfloat16>("q row sw bf16");
  check_quantize_per_row<format::nvfp4<>, scale_layout::linear, __half>("q row lin f16");
  check_quantize_per_row<format::nvfp4<>, scale_layout::swizzled_128x4, float>("q row sw f32");
  // (recipe::vllm: its device multiplier uses rcp.approx, so its element codes are not the host's;
  // the per-row vllm test below compares them with the device codec.)
}

TEST_CASE("quantize [gpu]: per-row global scales refuse a null row-scale array on the two-pass path, writing nothing", "[gpu][quantize]") {
  using F = format::nvfp4<>;
  using L = scale_layout::swizzled_128x4;
  const std::int64_t rows = 4, cols = 16384 + 64;  // 1028 scale columns > 1024 per CTA: two passes
  device_buffer d_in(static_cast<std::size_t>(rows * cols) * 2), d_out(static_cast<std::size_t>(rows * cols / 2)),
      d_scales(static_cast<std::size_t>(L{rows, cols / 16}.size_bytes())), d_rs(static_cast<std::size_t>(rows) * 4);
  const fp4fuse::matrix_view<const __nv_bfloat16> in{d_in.as<__nv_bfloat16>(), rows, cols, cols};
  const fp4fuse::quantized_matrix<F, L> out{d_out.as<std::uint8_t>(), cols / 2, d_scales.as<std::uint8_t>(), L{rows, cols / 16}};
  const fp4fuse::result null_scales = fp4fuse::quantize(in, out, fp4fuse::global_scale::per_row{nullptr});
  CHECK(null_scales.code == fp4fuse::status::null_pointer);
  FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
  for (const device_buffer* b : {&d_out, &d_scales, &d_rs}) {
    const std::vector<unsigned char> bytes = b->download();
    CHECK(std::count(bytes.begin(), bytes.end(), poison) == static_cast<std::ptrdiff_t>(bytes.size()));
  }
}

TEST_CASE("quantize [gpu]: per-row global scales with the vllm recipe: S_r equal the host's, codes equal the device block codec with S_r",
          "[gpu][quantize]") {
  using F = format::nvfp4<recipe::vllm>;
  using L = scale_layout::swizzled_128x4;
  auto g = rng("q row vllm");
  for (const bool adversarial : {false, true}) {
    for (const matrix_shape& s : kernel_shapes) {
      const std::int64_t ld = s.cols + s.ld_extra, blocks = s.cols / 16;
      const std::vector<__nv_bfloat16> in =
          to_elements<__nv_bfloat16>(adversarial ? adversarial_matrix<16>(s.rows, s.cols, ld, g) : make_matrix(s.rows, s.cols, ld, g));
      // S_r on the host: the row amax is exact and nvfp4_global_encode_scale IEEE, so the device's
      // must be these bits; the element codes depend on vllm's rcp.approx, so the reference is the
      // device codec.
      std::vector<float> want_S(static_cast<std::size_t>(s.rows));
      for (std::int64_t r = 0; r < s.rows; ++r) {
        float amax = 0.0f;
        for (std::int64_t c = 0; c < s.cols; ++c) {
          const float v = std::fabs(as_float(in[static_cast<std::size_t>(r * ld + c)]));
          if (!std::isnan(v)) amax = std::max(amax, v);
        }
        want_S[static_cast<std::size_t>(r)] = fp4fuse::nvfp4_global_encode_scale(amax);
      }
      const L layout{s.rows, blocks};
      device_buffer d_in(in.size() * 2), d_rs(static_cast<std::size_t>(s.rows) * 4), d_want_S(static_cast<std::size_t>(s.rows) * 4),
          out(static_cast<std::size_t>(s.rows * blocks * 8)), ref(static_cast<std::size_t>(s.rows * blocks * 8)),
          sc(static_cast<std::size_t>(layout.size_bytes())), ref_sc(static_cast<std::size_t>(layout.size_bytes()));
      d_in.upload(in.data(), in.size() * 2);
      d_want_S.upload(want_S.data(), want_S.size() * 4);
      FP4FUSE_TEST_CUDA(cudaMemset(ref_sc.as<void>(), 0, static_cast<std::size_t>(layout.size_bytes())));
      INFO((adversarial ? "adversarial " : "") << "M=" << s.rows << " K=" << s.cols);
      REQUIRE(static_cast<bool>(fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{d_in.as<__nv_bfloat16>(), s.rows, s.cols, ld},
                                                   fp4fuse::quantized_matrix<F, L>{out.as<std::uint8_t>(), blocks * 8, sc.as<std::uint8_t>(), layout},
                                                   fp4fuse::global_scale::per_row{d_rs.as<float>()})));
      reference_quantize_kernel<F, L><<<static_cast<unsigned>((s.rows * blocks + 127) / 128), 128>>>(
          d_in.as<__nv_bfloat16>(), s.rows, blocks, ld, ref.as<std::uint8_t>(), ref_sc.as<std::uint8_t>(), d_want_S.as<float>(), layout, true);
      FP4FUSE_TEST_LAUNCHED();
      std::vector<unsigned char> want_rs(want_S.size() * 4);
      std::memcpy(want_rs.data(), want_S.data(), want_rs.size());
      CHECK(d_rs.download() == want_rs);
      CHECK(out.download() == ref.download());
      CHECK(sc.download() == ref_sc.download());
      CHECK(out.guard_intact());
      CHECK(sc.guard_intact());
      CHECK(d_rs.guard_intact());
    }
  }
}
