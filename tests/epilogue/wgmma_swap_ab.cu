// The swap-AB wgmma adapter (epilogue/wgmma_swap_ab.cuh). On the CPU: the fragment's map into the
// scratch is a bijection onto the token rows and conflict-free as its comment says (each register's
// 32 stores on 32 banks, each quarter warp's 16-byte row loads on 8 distinct slots). On the GPU:
// registers filled as wgmma m64nNk16 leaves them with W's gate/up rows as M and the tokens as N, two
// warpgroups per block (named barriers 1 and 2, scratch in dynamic shared memory), tiles covering
// the scale tensor's padded extent, into poisoned outputs: every packed and scale byte, the guard
// zones and the output amax equal to the host twin's (wgmma_swap_ab_epilogue_host, itself checked
// against the host block_codec in tests/epilogue/host_twin.cu), NVFP4 and MXFP4, with and without a
// bias, 8 to 256 tokens, all at once and in chunks of 16-64 tokens (the last chunk partial too).
#include <fp4fuse/epilogue/host_twin.cuh>
#include <fp4fuse/epilogue/wgmma_swap_ab.cuh>

#include <set>

#include "../kernels/kernel_test_support.cuh"

using namespace fp4fuse_test;

namespace {

using layout_t = fp4fuse::scale_layout::swizzled_128x4;
using il8 = fp4fuse::gate_up::interleaved<8>;
/// The scratch index of register i of fragment f of thread t, as the adapter stores it.
template <int Tokens, int Fragments>
int scratch_index(int t, int f, int i) {
  using frag = fp4fuse::wgmma_m64nN_f32_fragment<Tokens>;
  return frag::col(t, i) * fp4fuse::detail::swap_ab_row_floats<Fragments> + 64 * f + frag::row(t, i);
}

template <int Tokens, int Fragments = 1>
void check_scratch_map() {
  INFO(Tokens << " tokens, " << Fragments << " fragments");
  constexpr int row_floats = fp4fuse::detail::swap_ab_row_floats<Fragments>;
  std::set<int> slots;
  for (int t = 0; t < 128; ++t)
    for (int f = 0; f < Fragments; ++f)
      for (int i = 0; i < Tokens / 2; ++i) slots.insert(scratch_index<Tokens, Fragments>(t, f, i));
  CHECK(slots.size() == static_cast<std::size_t>(64 * Fragments * Tokens));  // every (token, gate/up column) once
  CHECK(*slots.rbegin() < fp4fuse::wgmma_swap_ab_scratch_floats<Tokens, Fragments>);
  for (int token : {0, Tokens - 1}) {
    for (int c = 0; c < 64 * Fragments; ++c) CHECK(slots.count(token * row_floats + c) == 1);  // a token's row: its columns in order
  }
  int conflicted_stores = 0, conflicted_loads = 0;
  for (int w = 0; w < 4; ++w)
    for (int f = 0; f < Fragments; ++f)
      for (int i = 0; i < Tokens / 2; ++i) {
        std::set<int> banks;
        for (int lane = 0; lane < 32; ++lane) banks.insert(scratch_index<Tokens, Fragments>(32 * w + lane, f, i) % 32);
        conflicted_stores += banks.size() != 32;
      }
  for (int first = 0; first < Tokens; first += 8) {  // a quarter warp's 16-byte loads: eight tokens at one offset
    for (int v = 0; v < 16 * Fragments; ++v) {
      std::set<int> units;
      for (int token = first; token < first + 8 && token < Tokens; ++token) units.insert(((token * row_floats) / 4 + v) % 8);
      conflicted_loads += units.size() != static_cast<std::size_t>(std::min(8, Tokens - first));
    }
  }
  CHECK(conflicted_stores == 0);
  CHECK(conflicted_loads == 0);
}

struct tile {
  std::int64_t token0, col0;
};

/// Tokens per pass through the scratch: Chunk, or all of them (0).
template <int Tokens, int Chunk>
constexpr int scratch_tokens = Chunk == 0 ? Tokens : Chunk;

/// Two warpgroups per block, each its tile (tiles[2 * block + wg]; none beyond `count`), scratch
/// from dynamic shared memory, named barrier 1 + wg; Chunk tokens at a time (0: all).
template <int Tokens, int Chunk, int Fragments, class Op>
__global__ void swap_ab_kernel(Op op, const float* gu, std::int64_t rows, std::int64_t gu_cols, const tile* tiles, int count) {
  extern __shared__ __align__(16) float scratch[];
  using frag = fp4fuse::wgmma_m64nN_f32_fragment<Tokens>;
  const int wg = static_cast<int>(threadIdx.x / 128), t = static_cast<int>(threadIdx.x % 128);
  const int index = 2 * static_cast<int>(blockIdx.x) + wg;
  if (index >= count) return;  // the whole warpgroup: the adapter is warpgroup-collective
  const tile at = tiles[index];
  float acc[Fragments][Tokens / 2];
#pragma unroll
  for (int f = 0; f < Fragments; ++f) {
#pragma unroll
    for (int i = 0; i < Tokens / 2; ++i) {
      const std::int64_t row = at.token0 + frag::col(t, i), col = at.col0 + 64 * f + frag::row(t, i);
      acc[f][i] = row < rows && col < gu_cols ? gu[row * gu_cols + col] : 1e4f;  // beyond the matrix: a value that would show
    }
  }
  float* mine = scratch + wg * fp4fuse::wgmma_swap_ab_scratch_floats<scratch_tokens<Tokens, Chunk>, Fragments>;
  if constexpr (Fragments == 1) {
    fp4fuse::wgmma_swap_ab_epilogue<Chunk>(op, acc[0], {at.token0, at.col0}, mine, 1 + wg);
  } else {
    fp4fuse::wgmma_swap_ab_epilogue<Chunk>(op, acc, {at.token0, at.col0}, mine, 1 + wg);
  }
}

template <int Tokens, int Chunk, class Format, class Intermediate, int Fragments = 1, class Activation>
void check_device(std::int64_t rows, std::int64_t I, const Activation& act, bool with_bias, const char* salt) {
  constexpr int bs = Format::block_size;
  auto g = rng(salt);
  constexpr int per_pass = scratch_tokens<Tokens, Chunk>;
  INFO(salt << ": " << Tokens << " tokens (" << per_pass << " at a time), " << Fragments << " fragments, M = " << rows << ", I = " << I << (with_bias ? ", bias" : ""));
  const std::vector<float> gu = make_matrix(rows, 2 * I, 2 * I, g, 3.0f);
  const column_bias_case bias_case = make_column_bias(gu, rows, 2 * I, g, with_bias);
  float m = 0.0f;
  for (float v : bias_case.biased)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  const float S = fp4fuse::nvfp4_global_encode_scale(m * m);
  const auto codec = fp4fuse::make_block_codec<Format>(S);
  const std::int64_t ld_packed = I / 2 + 16;
  const layout_t layout{rows, I / bs};
  const std::int64_t gu_cols = layout.padded_cols() * bs * 2;
  std::vector<tile> tiles;
  for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += Tokens)
    for (std::int64_t c0 = 0; c0 < gu_cols; c0 += 64) tiles.push_back({r0, c0});
  const std::size_t packed_bytes = static_cast<std::size_t>(rows * ld_packed), scale_bytes = static_cast<std::size_t>(layout.size_bytes());
  // The host twin into poisoned host buffers.
  std::vector<std::uint8_t> want_p(packed_bytes, poison), want_s(scale_bytes, poison);
  float want_amax = 0.0f;
  using frag = fp4fuse::wgmma_m64nN_f32_fragment<Tokens>;
  static float acc[128][Tokens / 2];
  const fp4fuse::quantized_matrix<Format, layout_t> host_out{want_p.data(), ld_packed, want_s.data(), layout};
  using direct = fp4fuse::sink::direct<Format, layout_t>;
  using global = fp4fuse::output_amax::global;
  for (const tile& at : tiles) {
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < Tokens / 2; ++i) {
        const std::int64_t row = at.token0 + frag::col(t, i), col = at.col0 + frag::row(t, i);
        acc[t][i] = row < rows && col < 2 * I ? gu[static_cast<std::size_t>(row * 2 * I + col)] : 1e4f;
      }
    if (with_bias) {
      fp4fuse::wgmma_swap_ab_epilogue_host(fp4fuse::fused_epilogue<Format, direct, Activation, il8, fp4fuse::column_bias, global, Intermediate>{
                                               codec, {host_out}, act, {}, {bias_case.bias.data(), 2 * I}, {&want_amax}},
                                           acc, {at.token0, at.col0});
    } else {
      fp4fuse::wgmma_swap_ab_epilogue_host(
          fp4fuse::fused_epilogue<Format, direct, Activation, il8, fp4fuse::no_bias, global, Intermediate>{codec, {host_out}, act, {}, {}, {&want_amax}},
          acc, {at.token0, at.col0});
    }
  }
  // The device: the same tiles (of 64 * Fragments gate/up columns), two per block.
  if (Fragments > 1) {
    tiles.clear();
    for (std::int64_t r0 = 0; r0 < layout.padded_rows(); r0 += Tokens)
      for (std::int64_t c0 = 0; c0 < gu_cols; c0 += 64 * Fragments) tiles.push_back({r0, c0});
  }
  device_buffer d_gu(gu.size() * sizeof(float)), d_bias(std::max<std::size_t>(bias_case.bias.size(), 1) * sizeof(float));
  device_buffer d_tiles(tiles.size() * sizeof(tile)), d_packed(packed_bytes), d_scales(scale_bytes), d_amax(sizeof(float));
  d_gu.upload(gu.data(), gu.size() * sizeof(float));
  if (with_bias) d_bias.upload(bias_case.bias.data(), bias_case.bias.size() * sizeof(float));
  d_tiles.upload(tiles.data(), tiles.size() * sizeof(tile));
  FP4FUSE_TEST_CUDA(cudaMemset(d_amax.as<float>(), 0, sizeof(float)));
  const fp4fuse::quantized_matrix<Format, layout_t> dev_out{d_packed.as<std::uint8_t>(), ld_packed, d_scales.as<std::uint8_t>(), layout};
  const int blocks = static_cast<int>((tiles.size() + 1) / 2);
  const std::size_t smem = 2 * fp4fuse::wgmma_swap_ab_scratch_floats<scratch_tokens<Tokens, Chunk>, Fragments> * sizeof(float);
  const auto launch = [&](auto op) {
    auto* kernel = &swap_ab_kernel<Tokens, Chunk, Fragments, decltype(op)>;
    FP4FUSE_TEST_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<blocks, 256, smem>>>(op, d_gu.as<float>(), rows, 2 * I, d_tiles.as<tile>(), static_cast<int>(tiles.size()));
    FP4FUSE_TEST_LAUNCHED();
  };
  if (with_bias) {
    launch(fp4fuse::fused_epilogue<Format, direct, Activation, il8, fp4fuse::column_bias, global, Intermediate>{
        codec, {dev_out}, act, {}, {d_bias.as<float>(), 2 * I}, {d_amax.as<float>()}});
  } else {
    launch(fp4fuse::fused_epilogue<Format, direct, Activation, il8, fp4fuse::no_bias, global, Intermediate>{
        codec, {dev_out}, act, {}, {}, {d_amax.as<float>()}});
  }
  const std::vector<unsigned char> got_p = d_packed.download(), got_s = d_scales.download(), got_a = d_amax.download();
  std::size_t bad_p = 0, bad_s = 0;
  for (std::size_t i = 0; i < packed_bytes; ++i) bad_p += got_p[i] != want_p[i];
  for (std::size_t i = 0; i < scale_bytes; ++i) bad_s += got_s[i] != want_s[i];
  CHECK(bad_p == 0);
  CHECK(bad_s == 0);
  float got_amax = 0.0f;
  std::memcpy(&got_amax, got_a.data(), sizeof got_amax);
  CHECK(bits_of(got_amax) == bits_of(want_amax));
  CHECK(d_packed.guard_intact());
  CHECK(d_scales.guard_intact());
}

}  // namespace

TEST_CASE("wgmma_swap_ab_epilogue: the scratch map is a bijection onto token rows, its stores and loads conflict-free", "[epilogue]") {
  check_scratch_map<8>();
  check_scratch_map<48>();
  check_scratch_map<64>();
  check_scratch_map<136>();
  check_scratch_map<256>();
  check_scratch_map<144, 2>();  // two fragments: rows of 132 floats
  check_scratch_map<32, 2>();
}

TEST_CASE("wgmma_swap_ab_epilogue [gpu]: two warpgroups per block write the host twin's bytes, padding and amax included, chunked or not",
          "[gpu][epilogue]") {
  using fp4fuse::intermediate::bf16;
  using fp4fuse::intermediate::fp32;
  using nv = fp4fuse::format::nvfp4<>;
  using mx = fp4fuse::format::mxfp4<>;
  for (std::int64_t rows : {1, 37, 130, 300}) {
    for (std::int64_t I : {32, 96, 1056}) {
      check_device<64, 0, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, false, "swap-AB 64");
      check_device<8, 0, nv, bf16>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "swap-AB 8 bias");
      check_device<136, 0, nv, fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "swap-AB 136 bias");
      check_device<256, 0, nv, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, false, "swap-AB 256");
      check_device<48, 0, mx, bf16>(rows, I, fp4fuse::activation::swiglu{}, true, "swap-AB mx 48 bias");
      check_device<128, 0, mx, fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, false, "swap-AB mx 128");
      // Chunks of the tokens through a smaller scratch: the same bytes.
      check_device<128, 32, nv, fp32>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "swap-AB 128 in chunks of 32");
      check_device<256, 64, nv, bf16>(rows, I, fp4fuse::activation::swiglu{}, false, "swap-AB 256 in chunks of 64");
      check_device<144, 64, nv, fp32>(rows, I, fp4fuse::activation::swiglu{}, true, "swap-AB 144 in chunks of 64 (the last of 16)");
      // Two fragments (128 gate/up columns) through one scratch.
      check_device<144, 32, nv, fp32, 2>(rows, I, fp4fuse::activation::swiglu_clamped{}, true, "swap-AB 2 x 144 in chunks of 32");
      check_device<64, 0, mx, bf16, 2>(rows, I, fp4fuse::activation::swiglu{}, false, "swap-AB mx 2 x 64");
      check_device<48, 16, mx, fp32>(rows, I, fp4fuse::activation::geglu_tanh{}, true, "swap-AB mx 48 in chunks of 16");
    }
  }
}
