// The standalone quantize and dequantize kernels against their host twins, every byte checked;
// argument validation on the host (runs in CI).
#include <fp4fuse/kernels/dequantize.cuh>
#include <fp4fuse/kernels/quantize.cuh>

#include "kernel_test_support.cuh"

using namespace fp4fuse_test;
using fp4fuse::scale_layout_linear;
using fp4fuse::scale_layout_swizzled_128x4;
namespace format = fp4fuse::format;
namespace recipe = fp4fuse::recipe;

namespace {

struct shape {
  std::int64_t rows, cols, ld_extra;
};
const shape shapes[] = {{1, 16, 0}, {1, 64, 8}, {3, 48, 0}, {130, 80, 16}, {257, 272, 0}, {129, 2064, 24}, {64, 7168, 0}};

/// Host twin of one quantize call: packed bytes (poisoned where the kernel must not write) and the
/// full scale tensor (0x00 padding).
template <class Format, class Layout, class T>
void host_quantize(const std::vector<T>& in, const shape& s, std::int64_t ld_in, std::int64_t ld_out, float S,
                   std::vector<unsigned char>& packed, std::vector<unsigned char>& scales) {
  constexpr int B = Format::block_size;
  const Layout layout{s.rows, s.cols / B};
  packed.assign(static_cast<std::size_t>(s.rows * ld_out), poison);
  scales.assign(static_cast<std::size_t>(layout.size_bytes()), 0x00);
  const fp4fuse::block_codec<Format> codec(S);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t b = 0; b < s.cols / B; ++b) {
      float x[B];
      for (int i = 0; i < B; ++i) x[i] = as_float(in[static_cast<std::size_t>(r * ld_in + b * B + i)]);
      std::uint32_t words[fp4fuse::block_codec<Format>::words_per_block];
      scales[static_cast<std::size_t>(layout.offset(r, b))] = codec.quantize(x, words);
      std::memcpy(&packed[static_cast<std::size_t>(r * ld_out + b * B / 2)], words, sizeof words);
    }
  }
}

template <class Format, class Layout, class T>
void check_quantize_kernel(const char* salt) {
  constexpr int B = Format::block_size;
  auto g = rng(salt);
  for (const shape& s : shapes) {
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
    fp4fuse::quantize_args<T> a{d_in.as<T>(), s.rows, s.cols, ld_in, d_out.as<std::uint8_t>(), ld_out,
                                d_scales.as<std::uint8_t>(), d_S.as<float>()};
    const fp4fuse::result r = fp4fuse::quantize<Format, Layout>(a);
    INFO(salt << " " << type_name<T>() << " M=" << s.rows << " K=" << s.cols << " ld=" << ld_in << ": " << r.message());
    REQUIRE(static_cast<bool>(r));
    FP4FUSE_TEST_LAUNCHED();

    std::vector<unsigned char> want_packed, want_scales;
    host_quantize<Format, Layout>(in, s, ld_in, ld_out, S, want_packed, want_scales);
    CHECK(d_out.download() == want_packed);  // ld padding bytes stay poisoned
    CHECK(d_scales.download() == want_scales);  // padding scales are 0x00
    CHECK(d_out.guard_intact());
    CHECK(d_scales.guard_intact());

    // Dequantize what the device wrote and compare with the host's block dequantization.
    device_buffer d_deq(static_cast<std::size_t>(s.rows * ld_in) * sizeof(T));
    fp4fuse::dequantize_args<T> da{d_out.as<std::uint8_t>(), s.rows, s.cols, ld_out, d_scales.as<std::uint8_t>(),
                                   d_S.as<float>(), d_deq.as<T>(), ld_in};
    REQUIRE(static_cast<bool>(fp4fuse::dequantize<Format, Layout>(da)));
    FP4FUSE_TEST_LAUNCHED();
    std::vector<unsigned char> want_deq(d_deq.bytes(), poison);
    for (std::int64_t row = 0; row < s.rows; ++row) {
      for (std::int64_t b = 0; b < s.cols / B; ++b) {
        float y[B];
        const unsigned char* p = &want_packed[static_cast<std::size_t>(row * ld_out + b * B / 2)];
        const std::uint8_t sc = want_scales[static_cast<std::size_t>(layout.offset(row, b))];
        if constexpr (Format::has_global_scale) {
          std::uint64_t w;
          std::memcpy(&w, p, 8);
          float tmp[16];
          fp4fuse::nvfp4_dequantize_block(w, sc, 1.0f / S, tmp);
          std::copy(tmp, tmp + 16, y);
        } else {
          fp4fuse::mxfp4_block mb{};
          std::memcpy(mb.packed, p, 16);
          mb.scale = sc;
          float tmp[32];
          fp4fuse::mxfp4_dequantize_block(mb, tmp);
          std::copy(tmp, tmp + 32, y);
        }
        for (int i = 0; i < B; ++i) {
          const T v = fp4fuse::detail::from_float<T>(y[i]);
          std::memcpy(&want_deq[static_cast<std::size_t>((row * ld_in + b * B + i)) * sizeof(T)], &v, sizeof(T));
        }
      }
    }
    CHECK(same_elements_nan_equal<T>(d_deq.download(), want_deq) == 0);
    CHECK(d_deq.guard_intact());
  }
}

}  // namespace

TEST_CASE("quantize [gpu]: NVFP4 te_exact, every dtype and layout, bit-exact with every byte checked", "[gpu][quantize]") {
  check_quantize_kernel<format::nvfp4<>, scale_layout_swizzled_128x4, __nv_bfloat16>("q nv sw bf16");
  check_quantize_kernel<format::nvfp4<>, scale_layout_linear, __nv_bfloat16>("q nv lin bf16");
  check_quantize_kernel<format::nvfp4<>, scale_layout_swizzled_128x4, __half>("q nv sw f16");
  check_quantize_kernel<format::nvfp4<>, scale_layout_linear, float>("q nv lin f32");
  check_quantize_kernel<format::nvfp4<>, scale_layout_swizzled_128x4, float>("q nv sw f32");
}

TEST_CASE("quantize [gpu]: MXFP4 both recipes, bit-exact with every byte checked", "[gpu][quantize]") {
  check_quantize_kernel<format::mxfp4<recipe::mx_ocp>, scale_layout_linear, __nv_bfloat16>("q mx lin bf16");
  check_quantize_kernel<format::mxfp4<recipe::mx_ocp>, scale_layout_swizzled_128x4, __half>("q mx sw f16");
  check_quantize_kernel<format::mxfp4<recipe::mx_round_up>, scale_layout_swizzled_128x4, float>("q mx up sw f32");
}

TEST_CASE("quantize: invalid arguments are refused before anything runs", "[quantize]") {
  // Fake, never dereferenced device addresses: validation must reject before any access.
  auto* in = reinterpret_cast<const __nv_bfloat16*>(std::uintptr_t(0x10000));
  auto* out = reinterpret_cast<std::uint8_t*>(std::uintptr_t(0x20000));
  auto* sc = reinterpret_cast<std::uint8_t*>(std::uintptr_t(0x30000));
  auto* S = reinterpret_cast<const float*>(std::uintptr_t(0x40000));
  using F = format::nvfp4<>;
  using L = scale_layout_swizzled_128x4;
  auto q = [&](fp4fuse::quantize_args<__nv_bfloat16> a) { return fp4fuse::quantize<F, L>(a).code; };
  const fp4fuse::quantize_args<__nv_bfloat16> ok{in, 4, 64, 64, out, 32, sc, S};
  auto with = [&](auto edit) { auto a = ok; edit(a); return q(a); };
  CHECK(with([&](auto& a) { a.input = nullptr; }) == fp4fuse::status::null_pointer);
  CHECK(with([&](auto& a) { a.output = nullptr; }) == fp4fuse::status::null_pointer);
  CHECK(with([&](auto& a) { a.scales = nullptr; }) == fp4fuse::status::null_pointer);
  CHECK(with([&](auto& a) { a.global_encode_scale = nullptr; }) == fp4fuse::status::null_pointer);
  CHECK(with([&](auto& a) { a.cols = 40; a.ld_input = 40; a.ld_output = 24; }) == fp4fuse::status::not_multiple_of_block);
  CHECK(with([&](auto& a) { a.cols = 0; }) == fp4fuse::status::bad_shape);
  CHECK(with([&](auto& a) { a.rows = -1; }) == fp4fuse::status::bad_shape);
  CHECK(with([&](auto& a) { a.input = in + 1; }) == fp4fuse::status::misaligned_pointer);
  CHECK(with([&](auto& a) { a.output = out + 4; }) == fp4fuse::status::misaligned_pointer);
  CHECK(with([&](auto& a) { a.ld_input = 60; }) == fp4fuse::status::bad_leading_dimension);
  CHECK(with([&](auto& a) { a.ld_input = 68; }) == fp4fuse::status::bad_leading_dimension);
  CHECK(with([&](auto& a) { a.ld_output = 16; }) == fp4fuse::status::bad_leading_dimension);
  CHECK(with([&](auto& a) { a.ld_output = 36; }) == fp4fuse::status::bad_leading_dimension);
  CHECK(with([&](auto& a) { a.rows = std::int64_t(1) << 40; }) == fp4fuse::status::bad_shape);
  // MXFP4 needs 32-element blocks and no global scale: a null scale pointer passes the pointer
  // checks and the call stops at the next invalid argument (never launching on these fake pointers).
  auto mx = ok;
  mx.global_encode_scale = nullptr;
  mx.ld_output = 40;
  CHECK(fp4fuse::quantize<format::mxfp4<>, L>(mx).code == fp4fuse::status::bad_leading_dimension);
  mx.ld_output = 32;
  mx.cols = 48;
  mx.ld_input = 48;
  CHECK(fp4fuse::quantize<format::mxfp4<>, L>(mx).code == fp4fuse::status::not_multiple_of_block);
  CHECK(std::string(fp4fuse::status_message(fp4fuse::status::not_multiple_of_block)).find("multiple") != std::string::npos);
  // Empty matrices are a no-op that succeeds without launching.
  CHECK(with([&](auto& a) { a.rows = 0; }) == fp4fuse::status::ok);
}

TEST_CASE("quantize: valid arguments without a usable GPU report the CUDA error instead of launching", "[quantize]") {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    (void)cudaGetLastError();
    return;  // covered by the [gpu] cases on a machine with a GPU
  }
  (void)cudaGetLastError();
  auto* in = reinterpret_cast<const __nv_bfloat16*>(std::uintptr_t(0x10000));
  auto* out = reinterpret_cast<std::uint8_t*>(std::uintptr_t(0x20000));
  auto* sc = reinterpret_cast<std::uint8_t*>(std::uintptr_t(0x30000));
  auto* S = reinterpret_cast<const float*>(std::uintptr_t(0x40000));
  const fp4fuse::result r = fp4fuse::quantize<format::nvfp4<>, scale_layout_linear>(
      fp4fuse::quantize_args<__nv_bfloat16>{in, 4, 64, 64, out, 32, sc, S});
  CHECK(r.code == fp4fuse::status::cuda_error);
  CHECK(r.cuda != cudaSuccess);
}

TEST_CASE("dequantize: invalid arguments are refused", "[quantize]") {
  auto* in = reinterpret_cast<const std::uint8_t*>(std::uintptr_t(0x10000));
  auto* sc = reinterpret_cast<const std::uint8_t*>(std::uintptr_t(0x30000));
  auto* S = reinterpret_cast<const float*>(std::uintptr_t(0x40000));
  auto* out = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t(0x20000));
  using F = format::nvfp4<>;
  const fp4fuse::dequantize_args<__nv_bfloat16> ok{in, 4, 64, 32, sc, S, out, 64};
  auto with = [&](auto edit) { auto a = ok; edit(a); return fp4fuse::dequantize<F, scale_layout_linear>(a).code; };
  CHECK(with([&](auto& a) { a.output = nullptr; }) == fp4fuse::status::null_pointer);
  CHECK(with([&](auto& a) { a.cols = 24; }) == fp4fuse::status::not_multiple_of_block);
  CHECK(with([&](auto& a) { a.output = out + 1; }) == fp4fuse::status::misaligned_pointer);
  CHECK(with([&](auto& a) { a.ld_output = 60; }) == fp4fuse::status::bad_leading_dimension);
  CHECK(with([&](auto& a) { a.ld_input = 30; }) == fp4fuse::status::bad_leading_dimension);
}

TEST_CASE("fast_divmod: exact quotients for every divisor shape the launchers use", "[quantize]") {
  auto g = rng("divmod");
  std::vector<std::uint32_t> divisors = {1, 2, 3, 4, 5, 7, 31, 32, 112, 127, 128, 129, 448, 1792, 65535, 65536, 1000003, 0x7FFFFFFFu};
  for (int i = 0; i < 200; ++i) divisors.push_back(static_cast<std::uint32_t>(g() % 0x7FFFFFFFu) + 1);
  for (std::uint32_t d : divisors) {
    const fp4fuse::detail::fast_divmod f(d);
    for (int i = 0; i < 20000; ++i) {
      const std::uint32_t n = static_cast<std::uint32_t>(g() & 0x7FFFFFFFu);
      REQUIRE(f.div(n) == n / d);
    }
    for (std::uint32_t n : {0u, d - 1, d, d + 1, 0x7FFFFFFFu, 0x7FFFFFFFu - (0x7FFFFFFFu % d)}) {
      REQUIRE(f.div(n) == n / d);
    }
  }
}

namespace {

/// Reference for the kernel plumbing: one thread per block calling the library's block codec on
/// the device directly (its own agreement with the host is tested in tests/nvfp4.cu).
template <class Format, class Layout>
__global__ void reference_quantize_kernel(const __nv_bfloat16* in, std::int64_t rows, std::int64_t blocks, std::int64_t ld,
                                          std::uint8_t* out, std::uint8_t* scales, const float* S, Layout layout) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows * blocks) return;
  const std::int64_t r = i / blocks, b = i % blocks;
  float x[16];
  for (int j = 0; j < 16; ++j) x[j] = __bfloat162float(in[r * ld + b * 16 + j]);
  std::uint32_t words[2];
  scales[layout.offset(r, b)] = fp4fuse::block_codec<Format>(*S).quantize(x, words);
  reinterpret_cast<uint2*>(out + r * (blocks * 8))[b] = make_uint2(words[0], words[1]);
}

}  // namespace

TEST_CASE("quantize [gpu]: NVFP4 vllm recipe through the kernel equals the device block codec; scales equal the host's",
          "[gpu][quantize]") {
  using F = format::nvfp4<recipe::vllm>;
  using L = scale_layout_swizzled_128x4;
  auto g = rng("q vllm");
  for (const shape& s : shapes) {
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
      REQUIRE(static_cast<bool>(fp4fuse::quantize<F, L>(fp4fuse::quantize_args<__nv_bfloat16>{
          d_in.as<__nv_bfloat16>(), s.rows, s.cols, ld, out.as<std::uint8_t>(), blocks * 8, sc.as<std::uint8_t>(), d_S.as<float>()})));
      reference_quantize_kernel<F, L><<<static_cast<unsigned>((s.rows * blocks + 127) / 128), 128>>>(
          d_in.as<__nv_bfloat16>(), s.rows, blocks, ld, ref.as<std::uint8_t>(), ref_sc.as<std::uint8_t>(), d_S.as<float>(), layout);
      FP4FUSE_TEST_LAUNCHED();
      INFO("M=" << s.rows << " K=" << s.cols << " S=" << S);
      CHECK(out.download() == ref.download());
      const std::vector<unsigned char> got_scales = sc.download();
      CHECK(got_scales == ref_sc.download());
      // Block scales do not involve rcp(S), so the host computes the same bytes.
      const fp4fuse::nvfp4_quantizer<recipe::vllm> host(S);
      std::size_t scale_bad = 0;
      for (std::int64_t r = 0; r < s.rows; ++r) {
        for (std::int64_t b = 0; b < blocks; ++b) {
          float x[16];
          for (int j = 0; j < 16; ++j) x[j] = as_float(in[static_cast<std::size_t>(r * ld + b * 16 + j)]);
          scale_bad += got_scales[static_cast<std::size_t>(layout.offset(r, b))] != host.block_scale(fp4fuse::nvfp4_block_amax(x)).code;
        }
      }
      CHECK(scale_bad == 0);
    }
  }
}
