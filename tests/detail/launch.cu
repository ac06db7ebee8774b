// The one validation path of every standalone launcher (detail/launch.cuh; fast_div from detail/fast_div.cuh): each bad
// argument is refused with its status and a sentence that names the argument and the requirement,
// before any CUDA call (the CPU cases pass fake device pointers that must never be touched); a
// machine without a GPU gets status::no_device for a valid call; on a GPU, refused calls leave
// every poisoned buffer untouched.
#include <fp4fuse/fp4fuse.cuh>

#include <functional>
#include <string>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;
using fp4fuse::status;
using L = fp4fuse::scale_layout::swizzled_128x4;
using Lin = fp4fuse::scale_layout::linear;
using NV = fp4fuse::format::nvfp4<>;
using MX = fp4fuse::format::mxfp4<>;
namespace gate_up = fp4fuse::gate_up;

namespace {

/// The pointers every call uses: fake (never dereferenced) on the CPU, real poisoned buffers on
/// the GPU. All 256-byte aligned.
struct pointers {
  const __nv_bfloat16* in;
  __nv_bfloat16* out_bf16;
  std::uint8_t* packed;
  std::uint8_t* scales;
  float* S;
  float* amax;
};

pointers fake_pointers() {
  const auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  return {static_cast<const __nv_bfloat16*>(at(0x100000)), static_cast<__nv_bfloat16*>(at(0x200000)),
          static_cast<std::uint8_t*>(at(0x300000)), static_cast<std::uint8_t*>(at(0x400000)), static_cast<float*>(at(0x500000)),
          static_cast<float*>(at(0x600000))};
}

struct bad_call {
  const char* what;
  std::function<fp4fuse::result(const pointers&)> call;
  status want;
  const char* names;  ///< must appear in the message (the argument or the requirement)
};

constexpr std::int64_t M = 4, K = 64, I = 64;

/// Every refused call of every launcher. The valid baseline of each launcher is M x K (or M x 2I
/// gate/up) bf16 with tight leading dimensions; each case changes one thing.
std::vector<bad_call> bad_calls() {
  using mv = fp4fuse::matrix_view<const __nv_bfloat16>;
  using qm = fp4fuse::quantized_matrix<NV, L>;
  using qmx = fp4fuse::quantized_matrix<MX, L>;
  const auto q = [](mv in, qm out, const float* S) { return fp4fuse::quantize(in, out, fp4fuse::global_scale::per_tensor{S}); };
  const auto sq = [](mv in, qm out, const float* S) {
    return fp4fuse::swiglu_quantize<gate_up::interleaved<8>>(in, out, fp4fuse::global_scale::per_tensor{S}, fp4fuse::activation::swiglu{});
  };
  const auto nv_out = [](const pointers& p) { return qm{p.packed, K / 2, p.scales, L{M, K / 16}}; };
  std::vector<bad_call> v;
  // quantize
  v.push_back({"quantize: null input", [&](const pointers& p) { return q(mv{nullptr, M, K, K}, nv_out(p), p.S); }, status::null_pointer, "in.data is null"});
  v.push_back({"quantize: misaligned input", [&](const pointers& p) { return q(mv{p.in + 1, M, K, K}, nv_out(p), p.S); },
               status::misaligned_pointer, "in.data"});
  v.push_back({"quantize: K not a multiple of 16", [&](const pointers& p) { return q(mv{p.in, M, 40, 40}, qm{p.packed, 24, p.scales, L{M, 2}}, p.S); },
               status::not_multiple_of_block, "in.cols = 40 must be a multiple of 16 (the NVFP4 block size)"});
  v.push_back({"quantize: ld below cols", [&](const pointers& p) { return q(mv{p.in, M, K, 60}, nv_out(p), p.S); },
               status::bad_leading_dimension, "in.ld = 60 must be >= in.cols = 64"});
  v.push_back({"quantize: ld not whole vectors", [&](const pointers& p) { return q(mv{p.in, M, K, 68}, nv_out(p), p.S); },
               status::bad_leading_dimension, "multiple of 8 elements (16 bytes of bf16)"});
  v.push_back({"quantize: negative rows", [&](const pointers& p) { return q(mv{p.in, -1, K, K}, qm{p.packed, K / 2, p.scales, L{-1, 4}}, p.S); },
               status::bad_shape, "in.rows = -1"});
  v.push_back({"quantize: null packed", [&](const pointers& p) { return q(mv{p.in, M, K, K}, qm{nullptr, K / 2, p.scales, L{M, 4}}, p.S); },
               status::null_pointer, "out.packed is null"});
  v.push_back({"quantize: null scales", [&](const pointers& p) { return q(mv{p.in, M, K, K}, qm{p.packed, K / 2, nullptr, L{M, 4}}, p.S); },
               status::null_pointer, "out.scales is null"});
  v.push_back({"quantize: misaligned packed", [&](const pointers& p) { return q(mv{p.in, M, K, K}, qm{p.packed + 4, K / 2, p.scales, L{M, 4}}, p.S); },
               status::misaligned_pointer, "out.packed"});
  v.push_back({"quantize: ld_packed too small", [&](const pointers& p) { return q(mv{p.in, M, K, K}, qm{p.packed, 16, p.scales, L{M, 4}}, p.S); },
               status::bad_leading_dimension, "out.ld_packed = 16 bytes must be >= cols / 2 = 32"});
  v.push_back({"quantize: ld_packed not whole blocks", [&](const pointers& p) { return q(mv{p.in, M, K, K}, qm{p.packed, 36, p.scales, L{M, 4}}, p.S); },
               status::bad_leading_dimension, "a multiple of 8 (one NVFP4 block)"});
  v.push_back({"quantize: null S", [&](const pointers& p) { return q(mv{p.in, M, K, K}, nv_out(p), nullptr); }, status::null_pointer,
               "scale.encode_scale"});
  v.push_back({"quantize: misaligned S", [&](const pointers& p) {
                 return q(mv{p.in, M, K, K}, nv_out(p), reinterpret_cast<const float*>(reinterpret_cast<const char*>(p.S) + 2));
               },
               status::misaligned_pointer, "scale.encode_scale"});
  v.push_back({"quantize: shapes differ", [&](const pointers& p) { return q(mv{p.in, M + 1, K, K}, nv_out(p), p.S); }, status::bad_shape,
               "in is [5, 64] but out (its layout) is [4, 64]"});
  v.push_back({"quantize: too large", [&](const pointers& p) {
                 const std::int64_t big = std::int64_t(1) << 36;
                 return q(mv{p.in, big, K, K}, qm{p.packed, K / 2, p.scales, L{big, 4}}, p.S);
               },
               status::bad_shape, "31-bit indexing"});
  v.push_back({"quantize MXFP4: K not a multiple of 32", [&](const pointers& p) {
                 return fp4fuse::quantize(mv{p.in, M, 48, 48}, qmx{p.packed, 32, p.scales, L{M, 1}}, fp4fuse::global_scale::none{});
               },
               status::not_multiple_of_block, "multiple of 32 (the MXFP4 block size)"});
  v.push_back({"quantize MXFP4: ld_packed not whole blocks", [&](const pointers& p) {
                 return fp4fuse::quantize(mv{p.in, M, K, K}, qmx{p.packed, 40, p.scales, L{M, 2}}, fp4fuse::global_scale::none{});
               },
               status::bad_leading_dimension, "a multiple of 16 (one MXFP4 block)"});
  v.push_back({"quantize MXFP4: packed misaligned for 16-byte blocks", [&](const pointers& p) {
                 return fp4fuse::quantize(mv{p.in, M, K, K}, qmx{p.packed + 8, K / 2, p.scales, L{M, 2}}, fp4fuse::global_scale::none{});
               },
               status::misaligned_pointer, "16-byte access per MXFP4 block"});
  // quantize with per-row global scales (row scales: the S buffer, which must stay untouched)
  const auto qr = [](mv in, qm out, float* row_S) { return fp4fuse::quantize(in, out, fp4fuse::global_scale::per_row{row_S}); };
  v.push_back({"quantize per-row: null row scales", [&](const pointers& p) { return qr(mv{p.in, M, K, K}, nv_out(p), nullptr); },
               status::null_pointer, "scale.encode_scales (one S per row, device memory) is null"});
  v.push_back({"quantize per-row: misaligned row scales", [&](const pointers& p) {
                 return qr(mv{p.in, M, K, K}, nv_out(p), reinterpret_cast<float*>(reinterpret_cast<char*>(p.S) + 2));
               },
               status::misaligned_pointer, "scale.encode_scales"});
  // Rows longer than one CTA holds take the two-pass path, whose tiled second pass has the
  // per-tensor kernel's 31-bit grid limit (2^22 rows of 2048 blocks: 2^32 threads).
  v.push_back({"quantize per-row: a two-pass launch beyond 31-bit indexing", [&](const pointers& p) {
                 const std::int64_t rows = std::int64_t(1) << 22, cols = 32768;
                 return qr(mv{p.in, rows, cols, cols}, qm{p.packed, cols / 2, p.scales, L{rows, cols / 16}}, p.S);
               },
               status::bad_shape, "31-bit indexing"});
  v.push_back({"quantize per-row: null input", [&](const pointers& p) { return qr(mv{nullptr, M, K, K}, nv_out(p), p.S); },
               status::null_pointer, "in.data is null"});
  v.push_back({"quantize per-row: shapes differ", [&](const pointers& p) { return qr(mv{p.in, M + 1, K, K}, nv_out(p), p.S); },
               status::bad_shape, "in is [5, 64] but out (its layout) is [4, 64]"});
  // swiglu_quantize
  const auto sq_out = [](const pointers& p) { return qm{p.packed, I / 2, p.scales, L{M, I / 16}}; };
  v.push_back({"swiglu_quantize: null input", [&](const pointers& p) { return sq(mv{nullptr, M, 2 * I, 2 * I}, sq_out(p), p.S); },
               status::null_pointer, "gate_up.data is null"});
  v.push_back({"swiglu_quantize: gate_up not 2I wide", [&](const pointers& p) { return sq(mv{p.in, M, I, I}, sq_out(p), p.S); },
               status::bad_shape, "gate_up must be [M, 2I]"});
  v.push_back({"swiglu_quantize: I not a multiple of the granule", [&](const pointers& p) {
                 return fp4fuse::swiglu_quantize<gate_up::interleaved<64>>(mv{p.in, M, 2 * 48, 2 * 48}, qm{p.packed, 24, p.scales, L{M, 3}},
                                                                          fp4fuse::global_scale::per_tensor{p.S}, fp4fuse::activation::swiglu{});
               },
               status::not_multiple_of_block, "multiple of the gate/up granule G = 64"});
  v.push_back({"swiglu_quantize: I = 24, not whole NVFP4 blocks", [&](const pointers& p) { return sq(mv{p.in, M, 48, 48}, qm{p.packed, 16, p.scales, L{M, 1}}, p.S); },
               status::not_multiple_of_block, "gives I = 24 output columns: I must be a multiple of the NVFP4 block size 16"});
  v.push_back({"swiglu_quantize: ld below 2I", [&](const pointers& p) { return sq(mv{p.in, M, 2 * I, 2 * I - 8}, sq_out(p), p.S); },
               status::bad_leading_dimension, "gate_up.ld = 120 must be >= gate_up.cols = 128"});
  v.push_back({"swiglu_quantize: null S", [&](const pointers& p) { return sq(mv{p.in, M, 2 * I, 2 * I}, sq_out(p), nullptr); },
               status::null_pointer, "scale.encode_scale"});
  v.push_back({"swiglu_quantize: rows differ", [&](const pointers& p) { return sq(mv{p.in, M + 1, 2 * I, 2 * I}, sq_out(p), p.S); },
               status::bad_shape, "gate_up is [5, 128] but the output is [4, 64]"});
  const auto sqr = [](mv in, qm out, float* row_S) {
    return fp4fuse::swiglu_quantize<gate_up::interleaved<8>>(in, out, fp4fuse::global_scale::per_row{row_S}, fp4fuse::activation::swiglu{});
  };
  v.push_back({"swiglu_quantize per-row: null row scales", [&](const pointers& p) { return sqr(mv{p.in, M, 2 * I, 2 * I}, sq_out(p), nullptr); },
               status::null_pointer, "scale.encode_scales (one S per row, device memory) is null"});
  v.push_back({"swiglu_quantize per-row: a two-pass launch beyond 31-bit indexing", [&](const pointers& p) {
                 const std::int64_t rows = std::int64_t(1) << 23, wide = 14336;
                 return sqr(mv{p.in, rows, 2 * wide, 2 * wide}, qm{p.packed, wide / 2, p.scales, L{rows, wide / 16}}, p.S);
               },
               status::bad_shape, "31-bit indexing"});
  v.push_back({"swiglu_quantize per-row: gate_up not 2I wide", [&](const pointers& p) { return sqr(mv{p.in, M, I, I}, sq_out(p), p.S); },
               status::bad_shape, "gate_up must be [M, 2I]"});
  // swiglu
  using ov = fp4fuse::matrix_view<__nv_bfloat16>;
  const auto sw = [](mv in, ov out) { return fp4fuse::gated_activation<gate_up::split_gate_first>(in, out, fp4fuse::global_scale::none{}, fp4fuse::activation::swiglu{}); };
  v.push_back({"gated_activation: misaligned output", [&](const pointers& p) { return sw(mv{p.in, M, 2 * I, 2 * I}, ov{p.out_bf16 + 4, M, I, I}); },
               status::misaligned_pointer, "out.data"});
  v.push_back({"gated_activation: I not a multiple of 16", [&](const pointers& p) { return sw(mv{p.in, M, 2 * 24, 2 * 24}, ov{p.out_bf16, M, 24, 24}); },
               status::not_multiple_of_block, "out.cols = 24 must be a multiple of 16"});
  v.push_back({"gated_activation: null output", [&](const pointers& p) { return sw(mv{p.in, M, 2 * I, 2 * I}, ov{nullptr, M, I, I}); },
               status::null_pointer, "out.data is null"});
  v.push_back({"gated_activation: output ld", [&](const pointers& p) { return sw(mv{p.in, M, 2 * I, 2 * I}, ov{p.out_bf16, M, I, I + 4}); },
               status::bad_leading_dimension, "out.ld = 68"});
  // dequantize
  using qin = fp4fuse::quantized_matrix<NV, L, const std::uint8_t>;
  const auto dq = [](qin in, const float* S, ov out) { return fp4fuse::dequantize(in, out, fp4fuse::global_scale::per_tensor{S}); };
  v.push_back({"dequantize: null packed", [&](const pointers& p) { return dq(qin{nullptr, K / 2, p.scales, L{M, 4}}, p.S, ov{p.out_bf16, M, K, K}); },
               status::null_pointer, "in.packed is null"});
  v.push_back({"dequantize: shapes differ", [&](const pointers& p) { return dq(qin{p.packed, K / 2, p.scales, L{M, 4}}, p.S, ov{p.out_bf16, M, 32, 32}); },
               status::bad_shape, "in (its layout) is [4, 64] but out is [4, 32]"});
  v.push_back({"dequantize: misaligned output", [&](const pointers& p) { return dq(qin{p.packed, K / 2, p.scales, L{M, 4}}, p.S, ov{p.out_bf16 + 1, M, K, K}); },
               status::misaligned_pointer, "out.data"});
  v.push_back({"dequantize: ld_packed", [&](const pointers& p) { return dq(qin{p.packed, 30, p.scales, L{M, 4}}, p.S, ov{p.out_bf16, M, K, K}); },
               status::bad_leading_dimension, "in.ld_packed = 30"});
  // A row of 2^31 columns or more: a block's 32-bit column offset would wrap (K = 2^32 + 16 wrote
  // block 2^28 over block 0's elements before the checker bounded the columns).
  v.push_back({"dequantize: a row of 2^32 + 16 columns", [&](const pointers& p) {
                 const std::int64_t wide = (std::int64_t{1} << 32) + 16;
                 return dq(qin{p.packed, wide / 2, p.scales, L{1, wide / 16}}, p.S, ov{p.out_bf16, 1, wide, wide});
               },
               status::bad_shape, "in has 4294967312 columns: below 2^31 is needed"});
  v.push_back({"quantize: a row of 2^31 columns", [&](const pointers& p) {
                 const std::int64_t wide = std::int64_t{1} << 31;
                 return q(mv{p.in, 1, wide, wide}, qm{p.packed, wide / 2, p.scales, L{1, wide / 16}}, p.S);
               },
               status::bad_shape, "in.cols = 2147483648 must be below 2147483648 (the kernel's 32-bit column offsets)"});
  v.push_back({"dequantize: null S", [&](const pointers& p) { return dq(qin{p.packed, K / 2, p.scales, L{M, 4}}, nullptr, ov{p.out_bf16, M, K, K}); },
               status::null_pointer, "scale.encode_scale"});
  // amax
  v.push_back({"amax: null amax", [&](const pointers& p) { return fp4fuse::amax(mv{p.in, M, K, K}, nullptr, fp4fuse::global_scale::none{}); }, status::null_pointer, "amax is null"});
  v.push_back({"amax: 12 columns", [&](const pointers& p) { return fp4fuse::amax(mv{p.in, M, 12, 16}, p.amax, fp4fuse::global_scale::none{}); }, status::not_multiple_of_block,
               "in.cols = 12 must be a multiple of 8 (16-byte vectors of 8 bf16/half elements)"});
  v.push_back({"amax: misaligned input", [&](const pointers& p) { return fp4fuse::amax(mv{p.in + 1, M, K, K}, p.amax, fp4fuse::global_scale::none{}); }, status::misaligned_pointer,
               "in.data"});
  v.push_back({"amax: ld", [&](const pointers& p) { return fp4fuse::amax(mv{p.in, M, K, 60}, p.amax, fp4fuse::global_scale::none{}); }, status::bad_leading_dimension, "in.ld = 60"});
  v.push_back({"amax: misaligned S", [&](const pointers& p) { return fp4fuse::amax(mv{p.in, M, K, K}, p.amax, fp4fuse::global_scale::per_tensor{reinterpret_cast<float*>(p.packed + 1)}); },
               status::misaligned_pointer, "scale.encode_scale"});
  v.push_back({"amax: too many vectors", [&](const pointers& p) { return fp4fuse::amax(mv{p.in, std::int64_t(1) << 28, K, K}, p.amax, fp4fuse::global_scale::none{}); },
               status::bad_shape, "at most 2^30 - 1"});
  return v;
}

bool have_gpu() {
  int n = 0;
  const bool yes = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return yes;
}

}  // namespace

TEST_CASE("launchers: every bad argument is refused before any CUDA call, naming the argument", "[validation]") {
  const pointers p = fake_pointers();
  for (const bad_call& c : bad_calls()) {
    const fp4fuse::result r = c.call(p);
    INFO(c.what << ": " << r.message());
    CHECK(r.code == c.want);
    CHECK(std::string(r.message()).find(c.names) != std::string::npos);
    CHECK(std::string(r.message()).rfind("fp4fuse::", 0) == 0);  // starts with the entry point
  }
}

TEST_CASE("launchers: empty matrices succeed without launching", "[validation]") {
  const pointers p = fake_pointers();
  using mv = fp4fuse::matrix_view<const __nv_bfloat16>;
  CHECK(static_cast<bool>(fp4fuse::quantize(mv{p.in, 0, K, K}, fp4fuse::quantized_matrix<NV, L>{p.packed, K / 2, p.scales, L{0, 4}}, fp4fuse::global_scale::per_tensor{p.S})));
  CHECK(static_cast<bool>(fp4fuse::swiglu_quantize<gate_up::interleaved<8>>(mv{p.in, 0, 2 * I, 2 * I}, fp4fuse::quantized_matrix<NV, Lin>{p.packed, I / 2, p.scales, Lin{0, 4}},
                                                                            fp4fuse::global_scale::per_tensor{p.S},
                                                                            fp4fuse::activation::swiglu{})));
  CHECK(static_cast<bool>(fp4fuse::quantize(mv{p.in, 0, K, K}, fp4fuse::quantized_matrix<NV, Lin>{p.packed, K / 2, p.scales, Lin{0, 4}},
                                            fp4fuse::global_scale::per_row{p.S})));
  CHECK(static_cast<bool>(fp4fuse::swiglu_quantize<gate_up::interleaved<8>>(mv{p.in, 0, 2 * I, 2 * I}, fp4fuse::quantized_matrix<NV, Lin>{p.packed, I / 2, p.scales, Lin{0, 4}},
                                                                            fp4fuse::global_scale::per_row{p.S},
                                                                            fp4fuse::activation::swiglu{})));
}

TEST_CASE("launchers: a valid call on a machine without a GPU reports no_device", "[validation]") {
  if (have_gpu()) {
    SUCCEED("a GPU is present: the [gpu] cases cover valid calls");
    return;
  }
  const pointers p = fake_pointers();
  using mv = fp4fuse::matrix_view<const __nv_bfloat16>;
  const fp4fuse::result r = fp4fuse::quantize(mv{p.in, M, K, K}, fp4fuse::quantized_matrix<NV, L>{p.packed, K / 2, p.scales, L{M, 4}}, fp4fuse::global_scale::per_tensor{p.S});
  INFO(r.message());
  CHECK(r.code == status::no_device);
  CHECK(r.cuda != cudaSuccess);
  CHECK(std::string(r.message()).find("no usable CUDA device") != std::string::npos);
  const fp4fuse::result a = fp4fuse::amax(mv{p.in, M, K, K}, p.amax, fp4fuse::global_scale::none{});
  CHECK(a.code == status::no_device);
  // The rule for empty inputs: a launcher that has nothing to write returns ok without a CUDA call
  // (the empty-matrix case above); amax always writes its result (0 for no elements, and S = 1), so
  // it needs a device even for M = 0.
  const fp4fuse::result empty_amax = fp4fuse::amax(mv{p.in, 0, K, K}, p.amax, fp4fuse::global_scale::per_tensor{p.S});
  CHECK(empty_amax.code == status::no_device);
  const fp4fuse::result row = fp4fuse::quantize(mv{p.in, M, K, K}, fp4fuse::quantized_matrix<NV, L>{p.packed, K / 2, p.scales, L{M, 4}},
                                                fp4fuse::global_scale::per_row{p.S});
  CHECK(row.code == status::no_device);
  // Rows longer than one CTA holds (two passes) pass validation too: no longer refused.
  const std::int64_t long_K = 16384 + 64, long_I = 8192 + 64;
  const fp4fuse::result long_row = fp4fuse::quantize(mv{p.in, M, long_K, long_K},
                                                     fp4fuse::quantized_matrix<NV, L>{p.packed, long_K / 2, p.scales, L{M, long_K / 16}},
                                                     fp4fuse::global_scale::per_row{p.S});
  INFO(long_row.message());
  CHECK(long_row.code == status::no_device);
  const fp4fuse::result long_I_row = fp4fuse::swiglu_quantize<gate_up::interleaved<8>>(
      mv{p.in, M, 2 * long_I, 2 * long_I}, fp4fuse::quantized_matrix<NV, L>{p.packed, long_I / 2, p.scales, L{M, long_I / 16}},
      fp4fuse::global_scale::per_row{p.S}, fp4fuse::activation::swiglu{});
  INFO(long_I_row.message());
  CHECK(long_I_row.code == status::no_device);
}

TEST_CASE("launchers [gpu]: refused calls leave every poisoned buffer untouched", "[gpu][validation]") {
  device_buffer in(1 << 16), out(1 << 16), packed(1 << 16), scales(1 << 16), S(256), amax(256);
  const float one = 1.0f;
  S.upload(&one, 4);
  const auto poisoned_S = S.download();
  const pointers p{in.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), packed.as<std::uint8_t>(), scales.as<std::uint8_t>(), S.as<float>(),
                   amax.as<float>()};
  for (const bad_call& c : bad_calls()) {
    INFO(c.what);
    const fp4fuse::result r = c.call(p);
    CHECK(r.code == c.want);
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());
    const auto untouched = [](const device_buffer& b) {
      const auto bytes = b.download();
      return std::all_of(bytes.begin(), bytes.end(), [](unsigned char x) { return x == poison; });
    };
    CHECK(untouched(in));
    CHECK(untouched(out));
    CHECK(untouched(packed));
    CHECK(untouched(scales));
    CHECK(untouched(amax));
    CHECK(S.download() == poisoned_S);
    CHECK(cudaGetLastError() == cudaSuccess);
  }
}
