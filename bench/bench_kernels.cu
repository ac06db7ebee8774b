// Standalone-kernel benchmark: median time of each kernel and shape, effective bandwidth (each
// input byte read once, each output byte written once), and the ratio to a device-to-device copy
// measured in the same run. L2 is flushed (a 256 MiB read) before every timed launch, so no
// kernel is timed from a warm L2; each time is one launch between two events.
//
//   bench_kernels [--reps N] [--markdown FILE]
#include <fp4fuse/fp4fuse.cuh>

#include "bench_support.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using namespace bench;

struct row {
  std::string kernel, shape;
  double mbytes, us, gbps, copy_ratio, model_ratio;
};
std::vector<row> g_rows;
double g_copy_gbps = 0, g_empty_us = 0;

void record(const std::string& kernel, const std::string& shape, double bytes, double us) {
  const double gbps = bytes / (us * 1e-6) / 1e9;
  const double model_us = g_empty_us + bytes / (g_copy_gbps * 1e9) * 1e6;
  g_rows.push_back({kernel, shape, bytes / 1e6, us, gbps, gbps / g_copy_gbps, us / model_us});
  std::printf("%-34s %-22s %9.1f MB %9.1f us %7.0f GB/s %6.1f%% of copy  %5.2fx model\n", kernel.c_str(), shape.c_str(),
              bytes / 1e6, us, gbps, 100.0 * gbps / g_copy_gbps, us / model_us);
  std::fflush(stdout);
}

std::string shape_str(std::int64_t m, std::int64_t k) { return "[" + std::to_string(m) + ", " + std::to_string(k) + "]"; }

}  // namespace

int main(int argc, char** argv) {
  const char* markdown = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) g_reps = std::atoi(argv[++i]);
    if (std::string(argv[i]) == "--markdown" && i + 1 < argc) markdown = argv[++i];
  }
  if (!have_device("bench_kernels")) return 0;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU: %s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  CHECK_CUDA(cudaMalloc(&g_flush, flush_bytes));

  // Reference: device-to-device copy of 1 GiB (2 GiB moved), and an empty launch.
  const std::size_t copy_bytes = std::size_t(1) << 30;
  void *src, *dst;
  CHECK_CUDA(cudaMalloc(&src, copy_bytes));
  CHECK_CUDA(cudaMalloc(&dst, copy_bytes));
  CHECK_CUDA(cudaMemset(src, 1, copy_bytes));
  const double copy_us = time_us([&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice)); });
  g_copy_gbps = 2.0 * copy_bytes / (copy_us * 1e-6) / 1e9;
  g_empty_us = time_us([] { empty_kernel<<<1, 32>>>(); });
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(dst));
  std::printf("device copy: %.0f GB/s (read + write); empty launch: %.1f us\n\n", g_copy_gbps, g_empty_us);

  // Buffers big enough for the largest shape.
  const std::size_t max_elems = std::size_t(8192) * 28672;  // Mixtral T=8192 gate/up, the largest input
  __nv_bfloat16 *x, *y;
  std::uint8_t *packed, *scales;
  float *d_S, *d_amax;
  CHECK_CUDA(cudaMalloc(&x, max_elems * 2));
  CHECK_CUDA(cudaMalloc(&y, max_elems * 2));
  CHECK_CUDA(cudaMalloc(&packed, max_elems / 2));
  CHECK_CUDA(cudaMalloc(&scales, max_elems / 16 + (1 << 20)));
  CHECK_CUDA(cudaMalloc(&d_S, 4));
  CHECK_CUDA(cudaMalloc(&d_amax, 4));
  fill_bf16<<<4096, 256>>>(x, max_elems, 12345u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_FP4(fp4fuse::amax(
      fp4fuse::matrix_view<const __nv_bfloat16>{x, 1, static_cast<std::int64_t>(max_elems), static_cast<std::int64_t>(max_elems)}, d_amax, fp4fuse::global_scale::per_tensor{d_S}));
  CHECK_CUDA(cudaDeviceSynchronize());

  using NV = fp4fuse::format::nvfp4<>;
  using MX = fp4fuse::format::mxfp4<>;
  using SW = fp4fuse::scale_layout::swizzled_128x4;
  using LIN = fp4fuse::scale_layout::linear;
  using in_view = fp4fuse::matrix_view<const __nv_bfloat16>;
  using IL8 = fp4fuse::gate_up::interleaved<8>;

  auto quantize_bytes = [](std::int64_t m, std::int64_t k, int block) {
    return double(m) * k * 2 + double(m) * k / 2 + double(SW{m, k / block}.size_bytes());
  };
  auto bench_quantize = [&](std::int64_t m, std::int64_t k) {
    const in_view in{x, m, k, k};
    const fp4fuse::quantized_matrix<NV, SW> out{packed, k / 2, scales, SW{m, k / 16}};
    record("quantize nvfp4 bf16 swizzled", shape_str(m, k), quantize_bytes(m, k, 16),
           time_us([&] { CHECK_FP4(fp4fuse::quantize(in, out, fp4fuse::global_scale::per_tensor{d_S})); }));
  };
  auto bench_swiglu = [&](std::int64_t m, std::int64_t i) {
    const in_view gu{x, m, 2 * i, 2 * i};
    const fp4fuse::quantized_matrix<NV, SW> out{packed, i / 2, scales, SW{m, i / 16}};
    const double bytes = double(m) * 2 * i * 2 + double(m) * i / 2 + double(SW{m, i / 16}.size_bytes());
    record("swiglu_quantize nvfp4 il8 swiglu", shape_str(m, 2 * i), bytes,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(gu, out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu{})); }));
  };

  // Measurement only: the quantize kernel at a fixed number of blocks per thread (the launcher picks
  // 2 from 2^20 blocks up, 1 below).
  auto bench_quantize_p = [&](auto p_tag, std::int64_t m, std::int64_t k) {
    constexpr int P = decltype(p_tag)::value;
    const in_view in{x, m, k, k};
    const fp4fuse::quantized_matrix<NV, SW> out{packed, k / 2, scales, SW{m, k / 16}};
    std::uint32_t tiles = 0, total = 0;
    fp4fuse::argument_checker c("bench");
    fp4fuse::detail::grid_extent(c, out.layout, P, tiles, total);
    record("quantize nvfp4 bf16, " + std::to_string(P) + " blocks/thread", shape_str(m, k), quantize_bytes(m, k, 16), time_us([&] {
             fp4fuse::detail::quantize_kernel<P, NV, SW, __nv_bfloat16><<<(total + 255) / 256, 256>>>(in, out, d_S, fp4fuse::detail::fast_div(tiles), total);
             CHECK_CUDA(cudaGetLastError());
           }));
  };

  std::printf("== the issue's headline shapes\n");
  bench_quantize(16384, 7168);
  bench_swiglu(16384, 2048);
  {
    const std::int64_t m = 16384, k = 7168;
    const fp4fuse::quantized_matrix<NV, SW, const std::uint8_t> deq_in{packed, k / 2, scales, SW{m, k / 16}};
    record("dequantize nvfp4 -> bf16 swizzled", shape_str(m, k), double(m) * k / 2 + double(SW{m, k / 16}.size_bytes()) + double(m) * k * 2,
           time_us([&] { CHECK_FP4(fp4fuse::dequantize(deq_in, fp4fuse::matrix_view<__nv_bfloat16>{y, m, k, k}, fp4fuse::global_scale::per_tensor{d_S})); }));
    const fp4fuse::quantized_matrix<MX, LIN> mx_out{packed, k / 2, scales, LIN{m, k / 32}};
    record("quantize mxfp4 bf16 linear", shape_str(m, k), double(m) * k * 2 + double(m) * k / 2 + double(m) * k / 32,
           time_us([&] { CHECK_FP4(fp4fuse::quantize(in_view{x, m, k, k}, mx_out, fp4fuse::global_scale::none{})); }));
    record("amax bf16 (+ global scale)", shape_str(m, k), double(m) * k * 2,
           time_us([&] { CHECK_FP4(fp4fuse::amax(in_view{x, m, k, k}, d_amax, fp4fuse::global_scale::per_tensor{d_S})); }));
    const in_view gu{x, m, 4096, 4096};
    record("swiglu -> compact bf16 (flow 2)", shape_str(m, 4096), double(m) * 4096 * 2 + double(m) * 2048 * 2,
           time_us([&] {
             CHECK_FP4(fp4fuse::gated_activation<IL8>(gu, fp4fuse::matrix_view<__nv_bfloat16>{y, m, 2048, 2048}, fp4fuse::global_scale::none{}, fp4fuse::activation::swiglu{}));
           }));
    const fp4fuse::quantized_matrix<NV, SW> g_out{packed, 1024, scales, SW{m, 128}};
    const double gb = double(m) * 4096 * 2 + double(m) * 1024 + double(SW{m, 128}.size_bytes());
    record("swiglu_quantize gptoss il1", shape_str(m, 4096), gb,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<1>>(gu, g_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu_clamped{})); }));
    // G = 1 against G = 8 with the same activation, and the opt-in fast activations (issue 15).
    record("swiglu_quantize nvfp4 il1 swiglu", shape_str(m, 4096), gb,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<1>>(gu, g_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu{})); }));
    record("swiglu_quantize nvfp4 il8 swiglu_fast", shape_str(m, 4096), gb,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(gu, g_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu_fast{})); }));
    record("swiglu_quantize nvfp4 il1 swiglu_fast", shape_str(m, 4096), gb,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<1>>(gu, g_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu_fast{})); }));
    record("swiglu_quantize gptoss il1 fast", shape_str(m, 4096), gb,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<fp4fuse::gate_up::interleaved<1>>(gu, g_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu_clamped_fast{})); }));
    {
      // Measurement only: the same kernel with two blocks per thread (the launcher uses one).
      std::uint32_t tiles = 0, total = 0;
      fp4fuse::argument_checker c("bench");
      fp4fuse::detail::grid_extent(c, g_out.layout, 2, tiles, total);
      const in_view guv{x, m, 4096, 4096};
      record("swiglu_quantize il8 swiglu_fast, 2 blocks/thread", shape_str(m, 4096), gb, time_us([&] {
               fp4fuse::detail::swiglu_quantize_kernel<2, NV, SW, IL8, fp4fuse::activation::swiglu_fast, fp4fuse::intermediate::fp32, __nv_bfloat16>
                   <<<(total + 255) / 256, 256>>>(guv, g_out, d_S, fp4fuse::activation::swiglu_fast{}, fp4fuse::detail::fast_div(tiles), total);
               CHECK_CUDA(cudaGetLastError());
             }));
      record("swiglu_quantize il8 swiglu, 2 blocks/thread", shape_str(m, 4096), gb, time_us([&] {
               fp4fuse::detail::swiglu_quantize_kernel<2, NV, SW, IL8, fp4fuse::activation::swiglu, fp4fuse::intermediate::fp32, __nv_bfloat16>
                   <<<(total + 255) / 256, 256>>>(guv, g_out, d_S, fp4fuse::activation::swiglu{}, fp4fuse::detail::fast_div(tiles), total);
               CHECK_CUDA(cudaGetLastError());
             }));
    }
    const fp4fuse::quantized_matrix<MX, LIN> mx_g_out{packed, 1024, scales, LIN{m, 64}};
    record("swiglu_quantize mxfp4 il8 swiglu", shape_str(m, 4096), double(m) * 4096 * 2 + double(m) * 1024 + double(m) * 64,
           time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(gu, mx_g_out, fp4fuse::global_scale::none{}, fp4fuse::activation::swiglu{})); }));
  }
  bench_quantize(8192, 4096);
  for (const auto& shape : {std::pair<std::int64_t, std::int64_t>{16384, 7168}, {8192, 4096}, {4096, 2048}, {1024, 7168}}) {
    bench_quantize_p(std::integral_constant<int, 1>{}, shape.first, shape.second);
    bench_quantize_p(std::integral_constant<int, 2>{}, shape.first, shape.second);
    bench_quantize_p(std::integral_constant<int, 4>{}, shape.first, shape.second);
  }
  {
    // Per-row (per-token) global scales beside the per-tensor form (issue 15): same bytes moved
    // plus the [M] floats of row scales.
    float* row_S = nullptr;
    CHECK_CUDA(cudaMalloc(&row_S, 16384 * 4));
    for (const auto& shape : {std::pair<std::int64_t, std::int64_t>{16384, 7168}, {8192, 4096}}) {
      const std::int64_t m = shape.first, k = shape.second;
      const fp4fuse::quantized_matrix<NV, SW> out{packed, k / 2, scales, SW{m, k / 16}};
      record("quantize nvfp4 bf16 swizzled per-row S", shape_str(m, k), quantize_bytes(m, k, 16) + 4.0 * m,
             time_us([&] { CHECK_FP4(fp4fuse::quantize(in_view{x, m, k, k}, out, fp4fuse::global_scale::per_row{row_S})); }));
    }
    const std::int64_t m = 16384;
    const in_view gu{x, m, 4096, 4096};
    const fp4fuse::quantized_matrix<NV, SW> g_out{packed, 1024, scales, SW{m, 128}};
    const double gb = double(m) * 4096 * 2 + double(m) * 1024 + double(SW{m, 128}.size_bytes()) + 4.0 * m;
    record("swiglu_quantize il8 swiglu per-row S", shape_str(m, 4096), gb, time_us([&] {
             CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(gu, g_out, fp4fuse::global_scale::per_row{row_S}, fp4fuse::activation::swiglu{}));
           }));
    record("swiglu_quantize il8 swiglu_fast per-row S", shape_str(m, 4096), gb, time_us([&] {
             CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(gu, g_out, fp4fuse::global_scale::per_row{row_S}, fp4fuse::activation::swiglu_fast{}));
           }));
    {
      // Rows longer than one CTA holds: per-row scales take two passes (the input read twice),
      // beside the per-tensor form of the same shape; bytes counted once, as for the one-pass form.
      const std::int64_t lm = 4096, lk = 32768, li = 14336;
      const fp4fuse::quantized_matrix<NV, SW> q_out{packed, lk / 2, scales, SW{lm, lk / 16}};
      record("quantize nvfp4 bf16 swizzled", shape_str(lm, lk), quantize_bytes(lm, lk, 16),
             time_us([&] { CHECK_FP4(fp4fuse::quantize(in_view{x, lm, lk, lk}, q_out, fp4fuse::global_scale::per_tensor{d_S})); }));
      record("quantize nvfp4 bf16 swizzled per-row S (two passes)", shape_str(lm, lk), quantize_bytes(lm, lk, 16) + 4.0 * lm,
             time_us([&] { CHECK_FP4(fp4fuse::quantize(in_view{x, lm, lk, lk}, q_out, fp4fuse::global_scale::per_row{row_S})); }));
      const in_view lgu{x, lm, 2 * li, 2 * li};
      const fp4fuse::quantized_matrix<NV, SW> lg_out{packed, li / 2, scales, SW{lm, li / 16}};
      const double lgb = double(lm) * 2 * li * 2 + double(lm) * li / 2 + double(SW{lm, li / 16}.size_bytes());
      record("swiglu_quantize il8 swiglu", shape_str(lm, 2 * li), lgb,
             time_us([&] { CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(lgu, lg_out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu{})); }));
      record("swiglu_quantize il8 swiglu per-row S (two passes)", shape_str(lm, 2 * li), lgb + 4.0 * lm, time_us([&] {
               CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(lgu, lg_out, fp4fuse::global_scale::per_row{row_S}, fp4fuse::activation::swiglu{}));
             }));
      record("swiglu_quantize il8 swiglu_fast per-row S (two passes)", shape_str(lm, 2 * li), lgb + 4.0 * lm, time_us([&] {
               CHECK_FP4(fp4fuse::swiglu_quantize<IL8>(lgu, lg_out, fp4fuse::global_scale::per_row{row_S}, fp4fuse::activation::swiglu_fast{}));
             }));
    }
    CHECK_CUDA(cudaFree(row_S));
  }
  bench_quantize(4096, 2048);
  bench_swiglu(4096, 1024);
  // What a copy of the same bytes achieves at the sizes whose targets are missed: at 20-90 MB the
  // copy itself pays the launch and ramp, so it bounds any memory-bound kernel of that size.
  for (const auto& shape : {std::pair<std::int64_t, std::int64_t>{8192, 4096}, {4096, 2048}, {1024, 7168}}) {
    const double moved = quantize_bytes(shape.first, shape.second, 16);
    const std::size_t half = static_cast<std::size_t>(moved / 2) & ~std::size_t(255);
    record("device copy, quantize's bytes", shape_str(shape.first, shape.second), 2.0 * half,
           time_us([&] { CHECK_CUDA(cudaMemcpyAsync(y, x, half, cudaMemcpyDeviceToDevice)); }));
  }

  std::printf("\n== MoE L1 rows (T tokens): quantize [T, hidden], swiglu_quantize [T, 2I]\n");
  struct model { const char* name; std::int64_t hidden, inter; };
  const model models[] = {{"DeepSeek-V3", 7168, 2048}, {"Qwen3-235B", 4096, 1536}, {"Qwen3-30B", 2048, 768},
                          {"GPT-OSS-120B", 2880, 2880}, {"Mixtral-8x7B", 4096, 14336}};
  for (const model& md : models) {
    for (std::int64_t t : {128, 1024, 8192}) {
      std::printf("-- %s T=%lld\n", md.name, static_cast<long long>(t));
      bench_quantize(t, md.hidden);
      bench_swiglu(t, md.inter);
    }
  }

  if (markdown) {
    if (FILE* f = std::fopen(markdown, "w")) {
      std::fprintf(f, "Device copy %.0f GB/s (read + write), empty launch %.1f us, GPU %s.\n\n", g_copy_gbps, g_empty_us, prop.name);
      std::fprintf(f, "| kernel | shape | MB moved | median us | GB/s | of copy BW | vs launch + bytes at copy BW |\n");
      std::fprintf(f, "|---|---|---:|---:|---:|---:|---:|\n");
      for (const row& r : g_rows) {
        std::fprintf(f, "| %s | %s | %.1f | %.1f | %.0f | %.1f%% | %.2fx |\n", r.kernel.c_str(), r.shape.c_str(), r.mbytes, r.us,
                     r.gbps, 100 * r.copy_ratio, r.model_ratio);
      }
      std::fclose(f);
    }
  }
  return 0;
}
