// Misuse of fp4fuse that must fail to compile with a sentence that says what to do
// (tests/static_errors.py compiles each case alone). CASE=0 is the valid baseline.
#include <fp4fuse/fp4fuse.cuh>

namespace fmt = fp4fuse::format;
namespace recipe = fp4fuse::recipe;

// Valid uses next to the cases, so that a failure is the case's own.
using nvfp4_te = fp4fuse::block_codec<fmt::nvfp4<recipe::te_exact>>;
using mxfp4_up = fp4fuse::block_codec<fmt::mxfp4<recipe::mx_round_up>>;
static_assert(nvfp4_te::block_size == 16 && mxfp4_up::block_size == 32, "both codecs");
static_assert(sizeof(fp4fuse::quantized_block<fmt::nvfp4<>>::packed) == 8 && sizeof(fp4fuse::quantized_block<fmt::mxfp4<>>::packed) == 16,
              "the same block type shape for both formats");

__global__ void epilogue_kernel(const float* S, fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out) {
  float acc[8][4] = {};
  const fp4fuse::block_codec<fmt::nvfp4<>> codec(*S);
#if CASE == 5  // expect: mma_epilogue: the fragment form needs gate and up interleaved by 8
  fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{codec, fp4fuse::sink::direct{out}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<1>{}},
                        acc, {0, 0});
#else
  fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{codec, fp4fuse::sink::direct{out}}, acc, {0, 0});
#endif
}

#if CASE == 1  // expect: fp4fuse::format::nvfp4<Recipe>: Recipe must be recipe::te_exact or recipe::vllm
fp4fuse::block_codec<fmt::nvfp4<recipe::mx_ocp>> bad_nvfp4(1.0f);
#elif CASE == 2  // expect: fp4fuse::format::mxfp4<Recipe>: Recipe must be recipe::mx_ocp or recipe::mx_round_up
fp4fuse::block_codec<fmt::mxfp4<recipe::vllm>> bad_mxfp4;
#elif CASE == 3  // expect: fp4fuse::block_codec<Format>: Format must be format::nvfp4<Recipe> or format::mxfp4<Recipe>
fp4fuse::block_codec<float> not_a_format;
#elif CASE == 4  // expect: fp4fuse::quantized_matrix<Format, Layout>: Format must be format::nvfp4<R> or format::mxfp4<R>
fp4fuse::quantized_matrix<recipe::vllm, fp4fuse::scale_layout::linear> not_a_format_either;
#elif CASE == 6  // expect: fp4fuse::quantize: the input must be __nv_bfloat16, __half or float
void bad_input(fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::linear> out) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const int>{nullptr, 1, 16, 16}, out, fp4fuse::global_scale::per_tensor{nullptr});
}
#elif CASE == 7  // expect: grouped_swizzled_128x4<ExpertStart>: expert_start::padded_prefix_sum or expert_start::offset_bound
fp4fuse::scale_layout::grouped_swizzled_128x4<int> bad_start{};
#elif CASE == 8  // expect: fp4fuse::quantize: a grouped (MoE) scale layout is written per expert
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
void grouped_into_dense(fp4fuse::quantized_matrix<fmt::nvfp4<>, grouped> out) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, out, fp4fuse::global_scale::per_tensor{nullptr});
}
#elif CASE == 9  // expect: sink::direct: a grouped (MoE) scale layout is written per expert
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::padded_prefix_sum>;
__global__ void grouped_epilogue(const float* S, fp4fuse::quantized_matrix<fmt::nvfp4<>, grouped> out) {
  float acc[8][4] = {};
  fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{fp4fuse::block_codec<fmt::nvfp4<>>(*S), fp4fuse::sink::direct{out}}, acc, {0, 0});
}
#elif CASE == 10  // expect: row_epilogue: the segment must hold whole gate/up granules (G divides N / 2)
void granule_too_wide(const float (&acc)[32]) {  // 16 output columns, but granules of 32
  (void)fp4fuse::row_epilogue(fp4fuse::fused_epilogue{nvfp4_te(1.0f), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<32>{}}, acc, {0, 0});
}
#elif CASE == 11  // expect: row_epilogue: N / 2 output columns must be whole blocks
void part_of_a_block(const float (&acc)[16]) {  // 8 output columns: half an NVFP4 block
  (void)fp4fuse::row_epilogue(fp4fuse::fused_epilogue{nvfp4_te(1.0f), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{}}, acc, {0, 0});
}
#elif CASE == 12  // expect: row_epilogue: N / 2 output columns must be whole blocks
void part_of_an_mx_block(const float (&acc)[32]) {  // 16 output columns: half an MXFP4 block
  (void)fp4fuse::row_epilogue(fp4fuse::fused_epilogue{mxfp4_up(), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{}}, acc, {0, 0});
}
#elif CASE == 13  // expect: row_epilogue(op, acc, origin): one accumulator needs gate_up::interleaved<G>
void one_accumulator_separate(const float (&acc)[32]) {
  (void)fp4fuse::row_epilogue(fp4fuse::fused_epilogue{nvfp4_te(1.0f), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::separate{}}, acc, {0, 0});
}
#elif CASE == 14  // expect: row_epilogue(op, gate, up, origin): two accumulators are gate_up::separate
void two_accumulators_interleaved(const float (&gate)[16], const float (&up)[16]) {
  (void)fp4fuse::row_epilogue(fp4fuse::fused_epilogue{nvfp4_te(1.0f), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<8>{}}, gate, up, {0, 0});
}
#elif CASE == 15  // expect: fused_epilogue: with sink::hand_back the amax partials come with the returned blocks
__global__ void hand_back_with_global_amax(const float* S, float* amax) {
  float acc[32] = {};
  (void)fp4fuse::row_epilogue(fp4fuse::fused_epilogue{fp4fuse::block_codec<fmt::nvfp4<>>(*S), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{},
                                                      fp4fuse::gate_up::interleaved<8>{}, fp4fuse::no_bias{}, fp4fuse::output_amax::global{amax}},
                              acc, {0, 0});
}
#elif CASE == 16  // expect: sink::staged: a grouped (MoE) scale layout is written per expert
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
__global__ void grouped_staged(const float* S, fp4fuse::quantized_matrix<fmt::nvfp4<>, grouped> out) {
  __shared__ alignas(16) unsigned char staging[16];
  float acc[32] = {};
  fp4fuse::row_epilogue(fp4fuse::fused_epilogue{fp4fuse::block_codec<fmt::nvfp4<>>(*S), fp4fuse::sink::staged{out, staging}}, acc, {0, 0});
}
#elif CASE == 17  // expect: Tiles must be a multiple of 4 for NVFP4 (16 output columns per block), of 8 for MXFP4 (32)
__global__ void mx_tiles(fp4fuse::quantized_matrix<fmt::mxfp4<recipe::mx_round_up>, fp4fuse::scale_layout::swizzled_128x4> out) {
  float acc[4][4] = {};  // 16 output columns: half an MXFP4 block
  fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{mxfp4_up(), fp4fuse::sink::direct{out}}, acc, {0, 0});
}
#elif CASE == 18  // expect: mma_epilogue: the fragment form needs gate and up interleaved by 8
__global__ void wgmma_hand_back_il1(const float* S) {
  float acc[64] = {};  // through the wgmma form's hand-back
  (void)fp4fuse::wgmma_epilogue(
      fp4fuse::fused_epilogue{nvfp4_te(*S), fp4fuse::sink::hand_back{}, fp4fuse::activation::swiglu{}, fp4fuse::gate_up::interleaved<1>{}}, acc, {0, 0});
}
#elif CASE == 19  // expect: tcgen05.ld 32x32b.xN: N is a power of two, 1..128
constexpr int not_a_load = fp4fuse::tcgen05_32x32b_fragment<48>::registers;
#elif CASE == 21  // expect: fused_epilogue: the sink's output must have the codec's format (format and recipe)
__global__ void recipe_mismatch(fp4fuse::quantized_matrix<fmt::mxfp4<recipe::mx_ocp>, fp4fuse::scale_layout::swizzled_128x4> out) {
  float acc[64] = {};  // an mx_round_up codec for an mx_ocp output, through the row form
  fp4fuse::row_epilogue(fp4fuse::fused_epilogue{mxfp4_up(), fp4fuse::sink::direct{out}}, acc, {0, 0});
}
#elif CASE == 22  // expect: fused_epilogue: the sink's output must have the codec's format (format and recipe)
__global__ void format_mismatch(const float* S, fp4fuse::quantized_matrix<fmt::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4> out) {
  float acc[64] = {};  // an NVFP4 codec for an MXFP4 output, through the wgmma form
  fp4fuse::wgmma_epilogue(fp4fuse::fused_epilogue{nvfp4_te(*S), fp4fuse::sink::direct{out}}, acc, {0, 0});
}
#elif CASE == 35  // expect: mma_epilogue: sink::staged copies 16-byte rows: NVFP4 needs Tiles a multiple of 8
__global__ void staged_one_block(const float* S, fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out) {
  __shared__ alignas(16) unsigned char staging[fp4fuse::mma_staging_bytes<4>];
  float acc[4][4] = {};  // one NVFP4 block per row: 8-byte rows
  fp4fuse::mma_epilogue(fp4fuse::fused_epilogue{nvfp4_te(*S), fp4fuse::sink::staged{out, staging}}, acc, {0, 0});
}
#elif CASE == 36  // expect: mma_epilogue_host: the host twin writes its output: sink::direct or sink::staged
void twin_hand_back() {
  static float acc[32][8][4];
  fp4fuse::mma_epilogue_host(fp4fuse::fused_epilogue{nvfp4_te(1.0f), fp4fuse::sink::hand_back{}}, acc, {0, 0});
}
#elif CASE == 20  // expect: write_scale_padding_beyond_grid: a grouped (MoE) layout is written per expert
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::padded_prefix_sum>;
__global__ void grouped_padding(fp4fuse::quantized_matrix<fmt::nvfp4<>, grouped> out) {
  fp4fuse::write_scale_padding_beyond_grid(out, {{64, 2}, {64, 2}}, {0, 0, {64, 2}}, static_cast<int>(threadIdx.x), 128);
}
#elif CASE == 37  // expect: write_scale_padding_in: a grouped (MoE) layout is written per expert
using grouped_in = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
__global__ void grouped_padding_in(std::uint8_t* scales, grouped_in layout) {
  fp4fuse::write_scale_padding_in(scales, layout, {0, 0, {64, 4}}, static_cast<int>(threadIdx.x), 128);
}
#elif CASE == 23  // expect: fp4fuse: MXFP4 has no global scale: pass global_scale::none{}
void per_row_mxfp4(fp4fuse::quantized_matrix<fmt::mxfp4<>, fp4fuse::scale_layout::linear> out, float* row_S) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 32, 32}, out, fp4fuse::global_scale::per_row{row_S});
}
#elif CASE == 24  // expect: fp4fuse: MXFP4 has no global scale: pass global_scale::none{}
void swiglu_per_row_mxfp4(fp4fuse::quantized_matrix<fmt::mxfp4<>, fp4fuse::scale_layout::swizzled_128x4> out, float* row_S) {
  (void)fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 64, 64},
                                                                   out, fp4fuse::global_scale::per_row{row_S}, fp4fuse::activation::swiglu{});
}
#elif CASE == 25  // expect: fp4fuse::quantize: a grouped (MoE) scale layout is written per expert
using grouped = fp4fuse::scale_layout::grouped_swizzled_128x4<fp4fuse::scale_layout::expert_start::offset_bound>;
void per_row_grouped(fp4fuse::quantized_matrix<fmt::nvfp4<>, grouped> out, float* row_S) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, out, fp4fuse::global_scale::per_row{row_S});
}
#elif CASE == 26  // expect: fp4fuse: the global scale must be a descriptor
void braced_scale(fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::linear> out, float* row_S) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, out, {row_S});
}
#elif CASE == 27  // expect: fp4fuse: the global scale must be a descriptor
void swiglu_braced_scale(fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::linear> out, const float* S) {
  (void)fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<8>>(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 64, 64}, out, {S},
                                                                   fp4fuse::activation::swiglu{});
}
#elif CASE == 28  // expect: fp4fuse: the global scale must be a descriptor
void raw_pointer_scale(fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::linear> out, const float* S) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, out, S);
}
#elif CASE == 29  // expect: fp4fuse: NVFP4 needs a global scale: pass global_scale::per_tensor{d_S}
void nvfp4_without_scale(fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::linear> out) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, out, fp4fuse::global_scale::none{});
}
#elif CASE == 30  // expect: fp4fuse: MXFP4 has no global scale: pass global_scale::none{}
void mxfp4_with_scale(fp4fuse::quantized_matrix<fmt::mxfp4<>, fp4fuse::scale_layout::linear> out, const float* S) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 32, 32}, out, fp4fuse::global_scale::per_tensor{S});
}
#elif CASE == 31  // expect: fp4fuse: MXFP4 has no global scale: pass global_scale::none{}
void mxfp4_dequantize_with_scale(fp4fuse::quantized_matrix<fmt::mxfp4<>, fp4fuse::scale_layout::linear, const unsigned char> in, const float* S) {
  (void)fp4fuse::dequantize(in, fp4fuse::matrix_view<__nv_bfloat16>{nullptr, 1, 32, 32}, fp4fuse::global_scale::per_tensor{S});
}
#elif CASE == 32  // expect: fp4fuse::amax: the scale must be global_scale::per_tensor{d_S}
void amax_per_row(float* amax, float* row_S) {
  (void)fp4fuse::amax(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, amax, fp4fuse::global_scale::per_row{row_S});
}
#elif CASE == 33  // expect: fp4fuse::gated_activation: the compact output has no global scale; pass global_scale::none{}
void compact_with_scale(const float* S) {
  (void)fp4fuse::gated_activation<fp4fuse::gate_up::interleaved<8>>(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 32, 32},
                                                                    fp4fuse::matrix_view<__nv_bfloat16>{nullptr, 1, 16, 16},
                                                                    fp4fuse::global_scale::per_tensor{S}, fp4fuse::activation::swiglu{});
}
#elif CASE == 34  // expect: fp4fuse::quantize: per_group scales need a grouped layout
void per_group_dense(fp4fuse::quantized_matrix<fmt::nvfp4<>, fp4fuse::scale_layout::linear> out, const float* S) {
  (void)fp4fuse::quantize(fp4fuse::matrix_view<const __nv_bfloat16>{nullptr, 1, 16, 16}, out, fp4fuse::global_scale::per_group{S});
}
#endif
