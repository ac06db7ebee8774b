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

  // NVFP4 blocks, both recipes; dequantization
  o[n++] = __float_as_uint(fp4fuse::nvfp4_block_amax(v16));
  const fp4fuse::nvfp4_block te = fp4fuse::nvfp4_quantizer<fp4fuse::recipe::te_exact>(S).quantize(v16);
  const fp4fuse::nvfp4_quantizer<fp4fuse::recipe::vllm> vq(S);
  const fp4fuse::nvfp4_block vl = vq.quantize(v16);
  const std::uint64_t ve = vq.encode(v16, vq.block_scale(x[6]));
  o[n++] = static_cast<std::uint32_t>(te.packed ^ vl.packed ^ ve) ^ te.scale ^ (vl.scale << 8);
  float d16[16];
  fp4fuse::nvfp4_dequantize_block(te.packed, te.scale, fp4fuse::nvfp4_global_decode_scale(S), d16);
  o[n++] = __float_as_uint(d16[threadIdx.x % 16]);

  // MXFP4 blocks, both recipes; dequantization
  const fp4fuse::mxfp4_block mo = fp4fuse::mxfp4_quantizer<fp4fuse::recipe::mx_ocp>{}.quantize(v32);
  const fp4fuse::mxfp4_block mr = fp4fuse::mxfp4_quantizer<fp4fuse::recipe::mx_round_up>{}.quantize(v32);
  o[n++] = mo.packed[0] ^ mr.packed[3] ^ mo.scale ^ (mr.scale << 8);
  float d32[32];
  fp4fuse::mxfp4_dequantize_block(mo, d32);
  o[n++] = __float_as_uint(d32[threadIdx.x % 32]);

  // The block codecs of both formats
  std::uint32_t w2[2], w4[4];
  o[n++] = fp4fuse::block_codec<fp4fuse::format::nvfp4<fp4fuse::recipe::vllm>>(S).quantize(v16, w2) ^ w2[1];
  o[n++] = fp4fuse::block_codec<fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>>().quantize(v32, w4) ^ w4[3];

  // Activations
  o[n++] = __float_as_uint(fp4fuse::activation::silu{}.apply(x[7], x[8]));
  o[n++] = __float_as_uint(fp4fuse::activation::swiglu_clamped{1.702f, 7.0f}.apply(x[7], x[8]));
  o[n++] = __float_as_uint(fp4fuse::activation::gelu_tanh{}.apply(x[7], x[8]));

  // Scale layouts and fragment maps
  const fp4fuse::scale_layout_linear lin{64, 8};
  const fp4fuse::scale_layout_swizzled_128x4 swz{64, 8};
  o[n++] = static_cast<std::uint32_t>(lin.offset(threadIdx.x % 64, 3) + swz.offset(threadIdx.x % 64, 5));
  o[n++] = fp4fuse::mma_m16n8_f32_fragment::row(threadIdx.x % 32, 3) + fp4fuse::wgmma_m64nN_f32_fragment<256>::col(threadIdx.x, 77) +
           fp4fuse::wgmma_m64nN_f32_fragment<256>::warp_in_warpgroup();
}

// ---- the fragment epilogues -------------------------------------------------------------------
template <class Intermediate, int Tiles, class Activation, class Recipe, class Layout>
__global__ void mma_epilogue_kernel(const float* in, Activation act, float S, fp4fuse::nvfp4_epilogue_output<Layout> out) {
  float acc[Tiles][4];
  for (int t = 0; t < Tiles; ++t)
    for (int r = 0; r < 4; ++r) acc[t][r] = in[(threadIdx.x * Tiles + t) * 4 + r];
  fp4fuse::swiglu_nvfp4_mma_epilogue<Intermediate>(acc, act, fp4fuse::nvfp4_quantizer<Recipe>(S), 16 * blockIdx.x, 0, out);
}

template <class Intermediate, int Registers, class Activation, class Recipe, class Layout>
__global__ void wgmma_epilogue_kernel(const float* in, Activation act, float S, fp4fuse::nvfp4_epilogue_output<Layout> out) {
  float acc[Registers];
  for (int r = 0; r < Registers; ++r) acc[r] = in[threadIdx.x * Registers + r];
  fp4fuse::swiglu_nvfp4_wgmma_epilogue<Intermediate>(acc, act, fp4fuse::nvfp4_quantizer<Recipe>(S), 64 * blockIdx.x, 0, out);
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
using linear = scale_layout_linear;
using swizzled = scale_layout_swizzled_128x4;

template <class... T>
struct list {};

volatile const void* sink;
template <class F>
void use(F f) {
  sink = reinterpret_cast<const void*>(f);
}

template <class Format, class Layout, class... T>
void quantize_for(list<T...>) {
  (use(&quantize<Format, Layout, T>), ...);
  (use(&dequantize<Format, Layout, T>), ...);
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
  use(&swiglu_quantize<nvfp4_te, swizzled, gate_up::interleaved<8>, intermediate::fp32, activation::silu, bf16>);
  use(&swiglu_quantize<nvfp4_te, swizzled, gate_up::interleaved<8>, intermediate::fp32, activation::silu, f16>);
  use(&swiglu_quantize<nvfp4_te, swizzled, gate_up::interleaved<8>, intermediate::fp32, activation::silu, float>);
  use(&swiglu_quantize<nvfp4_te, swizzled, gate_up::interleaved<8>, intermediate::bf16, activation::silu, bf16>);
  use(&swiglu_quantize<nvfp4_te, linear, gate_up::split_gate_first, intermediate::fp32, activation::swiglu_clamped, bf16>);
  use(&swiglu_quantize<nvfp4_vllm, linear, gate_up::split_up_first, intermediate::fp32, activation::gelu_tanh, bf16>);
  use(&swiglu_quantize<nvfp4_vllm, swizzled, gate_up::interleaved<1>, intermediate::bf16, activation::swiglu_clamped, bf16>);
  use(&swiglu_quantize<mxfp4_ocp, linear, gate_up::interleaved<8>, intermediate::fp32, activation::silu, bf16>);
  use(&swiglu_quantize<mxfp4_up, swizzled, gate_up::split_gate_first, intermediate::bf16, activation::gelu_tanh, f16>);
  use(&swiglu_quantize<mxfp4_ocp, swizzled, gate_up::interleaved<64>, intermediate::fp32, activation::swiglu_clamped, float>);

  // swiglu (compact output): each output type, gate/up layout and activation.
  use(&swiglu<bf16, gate_up::split_gate_first, activation::silu, bf16>);
  use(&swiglu<f16, gate_up::split_up_first, activation::swiglu_clamped, f16>);
  use(&swiglu<float, gate_up::interleaved<8>, activation::gelu_tanh, float>);
  use(&swiglu<bf16, gate_up::interleaved<1>, activation::silu, float>);

  // amax: both NaN policies, every element type.
  use(&amax<nan_policy::ignore, bf16>);
  use(&amax<nan_policy::ignore, f16>);
  use(&amax<nan_policy::ignore, float>);
  use(&amax<nan_policy::propagate, bf16>);
  use(&amax<nan_policy::propagate, float>);

  // The epilogues: a lone block (4 tiles), a group of four blocks (16), a group plus a lone
  // block (20); both intermediates, activations, recipes and layouts; wgmma N = 256 and 64.
  use(&numerics_kernel);
  use(&mma_epilogue_kernel<intermediate::fp32, 4, activation::silu, recipe::te_exact, swizzled>);
  use(&mma_epilogue_kernel<intermediate::fp32, 16, activation::silu, recipe::te_exact, swizzled>);
  use(&mma_epilogue_kernel<intermediate::bf16, 20, activation::swiglu_clamped, recipe::vllm, linear>);
  use(&mma_epilogue_kernel<intermediate::fp32, 8, activation::gelu_tanh, recipe::te_exact, linear>);
  use(&wgmma_epilogue_kernel<intermediate::fp32, 128, activation::silu, recipe::te_exact, swizzled>);
  use(&wgmma_epilogue_kernel<intermediate::bf16, 32, activation::silu, recipe::vllm, linear>);
}

}  // namespace fp4fuse_device_code

int main() {
  fp4fuse_device_code::instantiate();
  return 0;
}
