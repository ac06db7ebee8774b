// Compiled (never run) by the 'compile' suite: the library's device code instantiated the way the
// unit tests instantiate it, compiled and assembled by ptxas for every test target the unit tests
// are not built for (test_extra_targets: sm_80, sm_89, sm_100a, sm_100f, sm_120a; the unit-test
// executables are built for gpu_targets only, the targets whose tests can run, and so compile all
// of this for those). This keeps "it compiles for sm_100a/sm_120a/..." covered for everything the
// tests instantiate, the Blackwell `cvt` paths included, without compiling the tests' own device
// code for targets that never run it.
//
// One device function or kernel family per block below; when a public name changes, this is the
// place to update in tests/compile/.
#include <fp4fuse/fp4fuse.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace {

// ---- element and block numerics: every public __host__ __device__ function, in a kernel --------
__global__ void numerics_kernel(const float* in, float S, std::uint32_t* out) {
  const float* x = in + 32 * threadIdx.x;
  float v4[4], v8[8], v16[16], v32[32];
  for (int i = 0; i < 32; ++i) v32[i] = x[i];
  for (int i = 0; i < 16; ++i) v16[i] = x[i];
  for (int i = 0; i < 8; ++i) v8[i] = x[i];
  for (int i = 0; i < 4; ++i) v4[i] = x[i];
  std::uint32_t* o = out + 64 * threadIdx.x;
  int n = 0;

  // E2M1
  o[n++] = fp4fuse::e2m1_encode(x[0]);
  o[n++] = fp4fuse::e2m1x2_encode(x[0], x[1]);
  o[n++] = fp4fuse::e2m1x4_encode(v4);
  o[n++] = fp4fuse::e2m1x8_encode(v8);
  const std::uint64_t p16 = fp4fuse::e2m1x16_encode(v16);
  o[n++] = static_cast<std::uint32_t>(p16) ^ static_cast<std::uint32_t>(p16 >> 32);
  const auto byte = static_cast<std::uint8_t>(o[1]);
  o[n++] = __float_as_uint(fp4fuse::e2m1_decode(byte & 0xF));
  const __half2 h2 = fp4fuse::e2m1x2_decode_half2(byte);
  o[n++] = __half_as_ushort(h2.x) | (static_cast<std::uint32_t>(__half_as_ushort(h2.y)) << 16);
  const __nv_bfloat162 b2 = fp4fuse::e2m1x2_decode_bfloat162(byte);
  o[n++] = __bfloat16_as_ushort(b2.x) | (static_cast<std::uint32_t>(__bfloat16_as_ushort(b2.y)) << 16);
  const float2 f2 = fp4fuse::e2m1x2_decode_float2(byte);
  o[n++] = __float_as_uint(f2.x + f2.y);
  o[n++] = static_cast<std::uint32_t>(fp4fuse::active_e2m1_path()) | (static_cast<std::uint32_t>(fp4fuse::active_e4m3_path()) << 1);

  o[n++] = fp4fuse::e2m1_encode_software(x[1]) | (fp4fuse::e4m3_encode_software(x[1]) << 4) |
           (fp4fuse::ue8m0_encode_software(x[1], fp4fuse::ue8m0_rounding::up) << 12);

  // E4M3, UE8M0, global scale
  const std::uint8_t e4 = fp4fuse::e4m3_encode(x[2]);
  o[n++] = e4 | (fp4fuse::e4m3x2_encode(x[2], x[3]) << 8);
  o[n++] = __float_as_uint(fp4fuse::e4m3_decode(e4));
  const std::uint8_t e8 = fp4fuse::ue8m0_encode(x[4], fp4fuse::ue8m0_rounding::up);
  o[n++] = e8 | (fp4fuse::ue8m0_encode(x[4], fp4fuse::ue8m0_rounding::toward_zero) << 8);
  o[n++] = __float_as_uint(fp4fuse::ue8m0_decode(e8));
  const float gs = fp4fuse::nvfp4_global_encode_scale(x[5]);
  o[n++] = __float_as_uint(gs * fp4fuse::nvfp4_global_decode_scale(gs));

  // The block codecs: both formats, every recipe, every member; dequantization
  using te_codec = fp4fuse::block_codec<fp4fuse::format::nvfp4<fp4fuse::recipe::te_exact>>;
  using vllm_codec = fp4fuse::block_codec<fp4fuse::format::nvfp4<fp4fuse::recipe::vllm>>;
  using ocp_codec = fp4fuse::block_codec<fp4fuse::format::mxfp4<fp4fuse::recipe::mx_ocp>>;
  using up_codec = fp4fuse::block_codec<fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>>;
  o[n++] = __float_as_uint(te_codec::combine_amax(te_codec::block_amax(v16), x[9]));
  const te_codec tq(S);
  const vllm_codec vq(S);
  const auto te = tq.quantize(v16);
  const auto vl = vq.quantize(v16);
  const auto ve = vq.encode(v16, vq.scale_for(x[6]));
  o[n++] = te.packed[0] ^ vl.packed[1] ^ ve.packed[0] ^ te.scale ^ (vl.scale << 8);
  float d16[16];
  tq.dequantize(te, d16);
  o[n++] = __float_as_uint(d16[threadIdx.x % 16] * tq.global_decode_scale() * te_codec::scale_value(te.scale));
  const auto mo = ocp_codec{}.quantize(v32);
  const auto mr = up_codec{}.quantize(v32);
  o[n++] = mo.packed[0] ^ mr.packed[3] ^ mo.scale ^ (mr.scale << 8) ^ __float_as_uint(ocp_codec::combine_amax(x[1], x[2]));
  float d32[32];
  ocp_codec{}.dequantize(mo, d32);
  o[n++] = __float_as_uint(d32[threadIdx.x % 32]);

  // Activations
  o[n++] = __float_as_uint(fp4fuse::activation::swiglu{}.apply(x[7], x[8]));
  o[n++] = __float_as_uint(fp4fuse::activation::swiglu_clamped{1.702f, 7.0f}.apply(x[7], x[8]));
  o[n++] = __float_as_uint(fp4fuse::activation::geglu_tanh{}.apply(x[7], x[8]));

  // Scale layouts and fragment maps
  const fp4fuse::scale_layout::linear lin{64, 8};
  const fp4fuse::scale_layout::swizzled_128x4 swz{64, 8};
  o[n++] = static_cast<std::uint32_t>(lin.offset(threadIdx.x % 64, 3) + swz.offset(threadIdx.x % 64, 5));
  o[n++] = fp4fuse::mma_m16n8_f32_fragment::row(threadIdx.x % 32, 3) + fp4fuse::wgmma_m64nN_f32_fragment<256>::col(threadIdx.x, 77) +
           fp4fuse::wgmma_m64nN_f32_fragment<256>::warp_in_warpgroup();
}

// ---- the fragment epilogues -------------------------------------------------------------------
template <class Intermediate, int Tiles, class Activation, class Recipe, class Layout>
__global__ void mma_epilogue_kernel(const float* in, Activation act, float S,
                                    fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<Recipe>, Layout> out) {
  float acc[Tiles][4];
  for (int t = 0; t < Tiles; ++t)
    for (int r = 0; r < 4; ++r) acc[t][r] = in[(threadIdx.x * Tiles + t) * 4 + r];
  using F = fp4fuse::format::nvfp4<Recipe>;
  const fp4fuse::fused_epilogue<F, fp4fuse::sink::direct<F, Layout>, Activation, fp4fuse::gate_up::interleaved<8>, fp4fuse::no_bias,
                                fp4fuse::output_amax::none, Intermediate>
      op{fp4fuse::block_codec<F>(S), {out}, act};
  fp4fuse::mma_epilogue(op, acc, {16 * blockIdx.x, 0});
}

template <class Intermediate, int Registers, class Activation, class Recipe, class Layout>
__global__ void wgmma_epilogue_kernel(const float* in, Activation act, float S,
                                      fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<Recipe>, Layout> out) {
  float acc[Registers];
  for (int r = 0; r < Registers; ++r) acc[r] = in[threadIdx.x * Registers + r];
  using F = fp4fuse::format::nvfp4<Recipe>;
  const fp4fuse::fused_epilogue<F, fp4fuse::sink::direct<F, Layout>, Activation, fp4fuse::gate_up::interleaved<8>, fp4fuse::no_bias,
                                fp4fuse::output_amax::none, Intermediate>
      op{fp4fuse::block_codec<F>(S), {out}, act};
  fp4fuse::wgmma_epilogue(op, acc, {64 * blockIdx.x, 0});
}

// The MXFP4 fragment form, every sink with bias and amax, and the row form with its sinks and amax.
template <class Format, int Tiles>
__global__ void mma_epilogue_any_format_kernel(const float* in, fp4fuse::quantized_matrix<Format, fp4fuse::scale_layout::swizzled_128x4> out,
                                               fp4fuse::quantized_block<Format>* handed, float* amax) {
  __shared__ alignas(16) std::uint8_t staging[4 * fp4fuse::mma_staging_bytes<Tiles>];
  float acc[Tiles][4];
  for (int t = 0; t < Tiles; ++t)
    for (int r = 0; r < 4; ++r) acc[t][r] = in[(threadIdx.x * Tiles + t) * 4 + r];
  const auto codec = fp4fuse::make_block_codec<Format>(448.0f);
  fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{codec, fp4fuse::sink::direct{out}}, acc, {16 * blockIdx.x, 0});
  const fp4fuse::fused_epilogue staged{codec, fp4fuse::sink::staged{out, staging}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{},
                                       fp4fuse::column_bias{in, 8 * Tiles}, fp4fuse::output_amax::global{amax}};
  fp4fuse::mma_epilogue(staged, acc, {16 * blockIdx.x, 0});
  float wacc[4 * Tiles];
  for (int r = 0; r < 4 * Tiles; ++r) wacc[r] = in[threadIdx.x * 4 * Tiles + r];
  fp4fuse::wgmma_epilogue(staged, wacc, {64 * blockIdx.x, 0});
  fp4fuse::wait_staged_stores();
  __syncwarp();
  const fp4fuse::fused_epilogue hand_back{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{},
                                          fp4fuse::column_bias{in, 8 * Tiles}};
  const auto q = fp4fuse::mma_epilogue(hand_back, acc, {16 * blockIdx.x, 0});
  handed[threadIdx.x] = q.block[1][0];
  fp4fuse::combine_output_amax(amax, q.amax(static_cast<int>(threadIdx.x % 32), 16, q.blocks));
  const auto w = fp4fuse::wgmma_epilogue(hand_back, wacc, {64 * blockIdx.x, 0});
  handed[threadIdx.x + 128] = w.block[0][0];
}

template <class Format, class Source, int N>
__global__ void row_epilogue_kernel(const float* in, fp4fuse::quantized_matrix<Format, fp4fuse::scale_layout::swizzled_128x4> out, float* amax) {
  __shared__ alignas(16) std::uint8_t staging[128][N / 4];
  float acc[N];
  for (int r = 0; r < N; ++r) acc[r] = in[threadIdx.x * N + r];
  const auto codec = fp4fuse::make_block_codec<Format>(448.0f);
  const fp4fuse::tile_origin origin{blockIdx.x * 128 + fp4fuse::tcgen05_32x32b_fragment<N>::thread_row(), 0};
  if constexpr (std::is_same_v<Source, fp4fuse::gate_up::separate>) {
    const float(&gate)[N / 2] = *reinterpret_cast<const float(*)[N / 2]>(&acc[0]);
    const float(&up)[N / 2] = *reinterpret_cast<const float(*)[N / 2]>(&acc[N / 2]);
    const fp4fuse::fused_epilogue op{codec, fp4fuse::sink::staged{out, staging[threadIdx.x % 128]}, fp4fuse::activation::swiglu{}, Source{},
                                     fp4fuse::column_bias{in, N}, fp4fuse::output_amax::global{amax}};
    fp4fuse::row_epilogue(op, gate, up, origin);
    fp4fuse::wait_staged_stores();
    const fp4fuse::fused_epilogue hand_back{codec, fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, Source{}};
    fp4fuse::combine_output_amax(amax, fp4fuse::row_epilogue(hand_back, gate, up, origin).amax(), true);
  } else {
    const fp4fuse::fused_epilogue op{codec, fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu_clamped{}, Source{}, fp4fuse::column_bias{in, N},
                                     fp4fuse::output_amax::global{amax}};
    fp4fuse::row_epilogue(op, acc, origin);
  }
}

template <class Format, int Registers, class Layout, int Chunk = 0>
__global__ void swap_ab_epilogue_kernel(const float* in, fp4fuse::quantized_matrix<Format, Layout> out, float* amax) {
  extern __shared__ __align__(16) float scratch[];
  float acc[Registers];
#pragma unroll
  for (int r = 0; r < Registers; ++r) acc[r] = in[threadIdx.x * Registers + r];
  const fp4fuse::fused_epilogue op{fp4fuse::make_block_codec<Format>(448.0f), fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu_clamped{},
                                   fp4fuse::gate_up::interleaved<8>{}, fp4fuse::column_bias{in, 64}, fp4fuse::output_amax::global{amax}};
  fp4fuse::wgmma_swap_ab_epilogue<Chunk>(op, acc, {2 * Registers * blockIdx.x, 0}, scratch, 1);
}

}  // namespace

// ---- every kernel family through its launcher (taking a launcher's address instantiates it and the
// kernels it launches) -----------------------------------------------------------------------
namespace fp4fuse_device_code {

using namespace fp4fuse;
using bf16 = __nv_bfloat16;
using f16 = __half;
using nvfp4_te = format::nvfp4<recipe::te_exact>;
using nvfp4_vllm = format::nvfp4<recipe::vllm>;
using mxfp4_ocp = format::mxfp4<recipe::mx_ocp>;
using mxfp4_up = format::mxfp4<recipe::mx_round_up>;
using linear = scale_layout::linear;
using swizzled = scale_layout::swizzled_128x4;

template <class... T>
struct list {};

volatile const void* sink;
template <class F>
void use(F f) {
  sink = reinterpret_cast<const void*>(f);
}

// One launcher per operation, its global-scale kind a template parameter: taking the address of a
// specialisation instantiates it and the kernels its kind launches.
template <class Format>
using tensor_scale = cuda::std::conditional_t<Format::has_global_scale, global_scale::per_tensor, global_scale::none>;

template <class Scale, class T, class Format, class Layout>
void use_quantize() {
  use(&quantize<T, Format, Layout, Scale>);
}
template <class GateUp, class Intermediate, class T, class Activation, class Format, class Layout, class Scale = tensor_scale<Format>>
void use_swiglu_quantize() {
  use(&swiglu_quantize<GateUp, Intermediate, T, Format, Layout, Scale, Activation>);
}

template <class Format, class Layout, class... T>
void quantize_for(list<T...>) {
  (use_quantize<tensor_scale<Format>, const T, Format, Layout>(), ...);
  if constexpr (Format::has_global_scale) {
    (use_quantize<global_scale::per_row, const T, Format, Layout>(), ...);
  }
  (use(&dequantize<Format, Layout, T, tensor_scale<Format>>), ...);
}

template <class... Format>
void quantize_all(list<Format...>) {
  (quantize_for<Format, linear>(list<bf16, f16, float>{}), ...);
  (quantize_for<Format, swizzled>(list<bf16, f16, float>{}), ...);
}

void instantiate() {
  // quantize and dequantize: every format and recipe, both layouts, bf16 / half / float.
  quantize_all(list<nvfp4_te, nvfp4_vllm, mxfp4_ocp, mxfp4_up>{});

  // swiglu_quantize: each element type, gate/up layout, activation, intermediate and format at
  // least once, and each format with each layout.
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::fp32, const bf16, activation::swiglu, nvfp4_te, swizzled>();
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::fp32, const f16, activation::swiglu, nvfp4_te, swizzled>();
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::fp32, const float, activation::swiglu, nvfp4_te, swizzled>();
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::bf16, const bf16, activation::swiglu, nvfp4_te, swizzled>();
  use_swiglu_quantize<gate_up::split_gate_first, intermediate::fp32, const bf16, activation::swiglu_clamped, nvfp4_te, linear>();
  use_swiglu_quantize<gate_up::split_up_first, intermediate::fp32, const bf16, activation::geglu_tanh, nvfp4_vllm, linear>();
  use_swiglu_quantize<gate_up::interleaved<1>, intermediate::bf16, const bf16, activation::swiglu_clamped, nvfp4_vllm, swizzled>();
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::fp32, const bf16, activation::swiglu, mxfp4_ocp, linear>();
  use_swiglu_quantize<gate_up::split_gate_first, intermediate::bf16, const f16, activation::geglu_tanh, mxfp4_up, swizzled>();
  use_swiglu_quantize<gate_up::interleaved<64>, intermediate::fp32, const float, activation::swiglu_clamped, mxfp4_ocp, swizzled>();

  // Per-row global scales and the fast activations.
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::fp32, const bf16, activation::swiglu, nvfp4_te, swizzled, global_scale::per_row>();
  use_swiglu_quantize<gate_up::interleaved<1>, intermediate::bf16, const f16, activation::swiglu_clamped, nvfp4_vllm, linear, global_scale::per_row>();
  use_swiglu_quantize<gate_up::split_gate_first, intermediate::fp32, const float, activation::swiglu_fast, nvfp4_te, linear, global_scale::per_row>();
  use_swiglu_quantize<gate_up::interleaved<8>, intermediate::fp32, const bf16, activation::swiglu_fast, nvfp4_te, swizzled>();
  use_swiglu_quantize<gate_up::interleaved<1>, intermediate::fp32, const bf16, activation::swiglu_clamped_fast, mxfp4_ocp, swizzled>();

  // gated_activation (compact output): each output type, gate/up layout and activation.
  use(&gated_activation<gate_up::split_gate_first, const bf16, bf16, global_scale::none, activation::swiglu>);
  use(&gated_activation<gate_up::split_up_first, const f16, f16, global_scale::none, activation::swiglu_clamped>);
  use(&gated_activation<gate_up::interleaved<8>, const float, float, global_scale::none, activation::geglu_tanh>);
  use(&gated_activation<gate_up::interleaved<1>, const float, bf16, global_scale::none, activation::swiglu>);

  // amax: both NaN policies, every element type.
  use(&amax<const bf16, global_scale::per_tensor, nan_policy::ignore>);
  use(&amax<const f16, global_scale::per_tensor, nan_policy::ignore>);
  use(&amax<const float, global_scale::per_tensor, nan_policy::ignore>);
  use(&amax<const bf16, global_scale::per_tensor, nan_policy::propagate>);
  use(&amax<const float, global_scale::per_tensor, nan_policy::propagate>);

  // The epilogues: a lone block (4 tiles), a group of four blocks (16), a group plus a lone
  // block (20); both intermediates, activations, recipes and layouts; wgmma N = 256 and 64.
  use(&numerics_kernel);
  use(&mma_epilogue_kernel<intermediate::fp32, 4, activation::swiglu, recipe::te_exact, swizzled>);
  use(&mma_epilogue_kernel<intermediate::fp32, 16, activation::swiglu, recipe::te_exact, swizzled>);
  use(&mma_epilogue_kernel<intermediate::bf16, 20, activation::swiglu_clamped, recipe::vllm, linear>);
  use(&mma_epilogue_kernel<intermediate::fp32, 8, activation::geglu_tanh, recipe::te_exact, linear>);
  use(&mma_epilogue_any_format_kernel<format::mxfp4<>, 16>);
  use(&mma_epilogue_any_format_kernel<nvfp4_te, 24>);
  use(&row_epilogue_kernel<nvfp4_te, gate_up::interleaved<8>, 32>);
  use(&row_epilogue_kernel<format::mxfp4<>, gate_up::interleaved<1>, 64>);
  use(&row_epilogue_kernel<nvfp4_te, gate_up::separate, 64>);
  use(&wgmma_epilogue_kernel<intermediate::fp32, 128, activation::swiglu, recipe::te_exact, swizzled>);
  use(&wgmma_epilogue_kernel<intermediate::bf16, 32, activation::swiglu, recipe::vllm, linear>);
  use(&swap_ab_epilogue_kernel<nvfp4_te, 32, swizzled>);
  use(&swap_ab_epilogue_kernel<format::mxfp4<>, 68, linear>);
  use(&swap_ab_epilogue_kernel<nvfp4_te, 128, swizzled, 64>);
}

}  // namespace fp4fuse_device_code

int main() {
  fp4fuse_device_code::instantiate();
  return 0;
}
