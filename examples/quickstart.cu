// fp4fuse quickstart: quantize an activation matrix to NVFP4 and apply SwiGLU + NVFP4 to a
// gate/up matrix, on the GPU when there is one (and check every byte against the host), or with
// the same functions on the host otherwise.
//
//   quickstart [M] [K] [I]     defaults: 256 rows, K = 1024, I = 512
#include <fp4fuse/fp4fuse.cuh>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

using F = fp4fuse::format::nvfp4<>;  // TransformerEngine's recipe
using L = fp4fuse::scale_layout::swizzled_128x4;
using GU = fp4fuse::gate_up::interleaved<8>;

bool cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

struct quantized {
  std::vector<unsigned char> packed, scales;
};

/// The host path: the same block functions the kernels use.
quantized host_quantize(const std::vector<float>& h, std::int64_t m, std::int64_t k, float S) {
  const L layout{m, k / 16};
  quantized q{std::vector<unsigned char>(static_cast<std::size_t>(m * k / 2)),
              std::vector<unsigned char>(static_cast<std::size_t>(layout.size_bytes()), 0)};
  const fp4fuse::block_codec<F> codec(S);
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t b = 0; b < k / 16; ++b) {
      float x[16];
      std::memcpy(x, &h[static_cast<std::size_t>(r * k + b * 16)], sizeof x);
      const fp4fuse::quantized_block<F> block = codec.quantize(x);
      q.scales[static_cast<std::size_t>(layout.offset(r, b))] = block.scale;
      std::memcpy(&q.packed[static_cast<std::size_t>(r * k / 2 + b * 8)], block.packed, 8);
    }
  }
  return q;
}

/// Relative RMS error of dequantize(q) against the unquantized values.
double rms_error(const quantized& q, const std::vector<float>& ref, std::int64_t m, std::int64_t k, float S) {
  const L layout{m, k / 16};
  const fp4fuse::block_codec<F> codec(S);
  double err = 0, norm = 0;
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t b = 0; b < k / 16; ++b) {
      fp4fuse::quantized_block<F> block{};
      std::memcpy(block.packed, &q.packed[static_cast<std::size_t>(r * k / 2 + b * 8)], 8);
      block.scale = q.scales[static_cast<std::size_t>(layout.offset(r, b))];
      float y[16];
      codec.dequantize(block, y);
      for (int i = 0; i < 16; ++i) {
        const double d = y[i] - ref[static_cast<std::size_t>(r * k + b * 16 + i)];
        err += d * d;
        norm += double(ref[static_cast<std::size_t>(r * k + b * 16 + i)]) * ref[static_cast<std::size_t>(r * k + b * 16 + i)];
      }
    }
  }
  return std::sqrt(err / norm);
}

float amax_of(const std::vector<float>& v) {
  float a = 0;
  for (float x : v) a = std::max(a, std::fabs(x));
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t M = argc > 1 ? std::atoll(argv[1]) : 256;
  const std::int64_t K = argc > 2 ? std::atoll(argv[2]) : 1024;
  const std::int64_t I = argc > 3 ? std::atoll(argv[3]) : 512;
  if (M <= 0 || K <= 0 || I <= 0 || K % 16 || I % 16) {
    std::fprintf(stderr, "usage: quickstart [M] [K] [I]  (K and I multiples of 16)\n");
    return 2;
  }
  // Activations with a few outliers, and a gate/up matrix interleaved in granules of 8 columns.
  std::mt19937 g(2026);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<__nv_bfloat16> x(static_cast<std::size_t>(M * K)), gu(static_cast<std::size_t>(M * 2 * I));
  std::vector<float> xf(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = __float2bfloat16_rn(n(g) * (i % 997 == 0 ? 30.0f : 1.0f));
    xf[i] = __bfloat162float(x[i]);
  }
  for (auto& v : gu) v = __float2bfloat16_rn(n(g) * 2.0f);
  // SwiGLU on the host (same activation function the kernel uses), in the compact order.
  std::vector<float> h(static_cast<std::size_t>(M * I));
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < I; ++c)
      h[static_cast<std::size_t>(r * I + c)] = fp4fuse::activation::swiglu{}.apply(
          __bfloat162float(gu[static_cast<std::size_t>(r * 2 * I + GU::gate_col(c, I))]),
          __bfloat162float(gu[static_cast<std::size_t>(r * 2 * I + GU::up_col(c, I))]));
  const float Sx = fp4fuse::nvfp4_global_encode_scale(amax_of(xf));
  const float Sh = fp4fuse::nvfp4_global_encode_scale(amax_of(h));
  const quantized hx = host_quantize(xf, M, K, Sx), hh = host_quantize(h, M, I, Sh);

  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  (void)cudaGetLastError();
  bool identical_x = true, identical_h = true;
  if (gpu) {
    cudaDeviceProp prop{};
    if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
    std::printf("fp4fuse %s quickstart on %s (sm_%d%d), E2M1 path: %s\n", FP4FUSE_VERSION_STRING, prop.name, prop.major,
                prop.minor, prop.major >= 10 ? "hardware cvt where compiled for it" : "software (no e2m1 cvt before sm_100)");
    __nv_bfloat16 *d_x, *d_gu;
    std::uint8_t *d_px, *d_sx, *d_ph, *d_sh;
    float *d_S, *d_amax, *d_Sh;
    const L lx{M, K / 16}, lh{M, I / 16};
    bool ok = cuda_ok(cudaMalloc(&d_x, x.size() * 2), "cudaMalloc") && cuda_ok(cudaMalloc(&d_gu, gu.size() * 2), "cudaMalloc") &&
              cuda_ok(cudaMalloc(&d_px, M * K / 2), "cudaMalloc") && cuda_ok(cudaMalloc(&d_sx, lx.size_bytes()), "cudaMalloc") &&
              cuda_ok(cudaMalloc(&d_ph, M * I / 2), "cudaMalloc") && cuda_ok(cudaMalloc(&d_sh, lh.size_bytes()), "cudaMalloc") &&
              cuda_ok(cudaMalloc(&d_S, 4), "cudaMalloc") && cuda_ok(cudaMalloc(&d_amax, 4), "cudaMalloc") &&
              cuda_ok(cudaMalloc(&d_Sh, 4), "cudaMalloc");
    if (!ok) return 1;
    if (!cuda_ok(cudaMemcpy(d_x, x.data(), x.size() * 2, cudaMemcpyHostToDevice), "upload") ||
        !cuda_ok(cudaMemcpy(d_gu, gu.data(), gu.size() * 2, cudaMemcpyHostToDevice), "upload") ||
        !cuda_ok(cudaMemcpy(d_Sh, &Sh, 4, cudaMemcpyHostToDevice), "upload")) {
      return 1;
    }
    // 1. amax -> S on the device, then quantize reading S from device memory.
    const fp4fuse::matrix_view<const __nv_bfloat16> x_view{d_x, M, K, K}, gu_view{d_gu, M, 2 * I, 2 * I};
    fp4fuse::result r = fp4fuse::amax(x_view, d_amax, fp4fuse::global_scale::per_tensor{d_S});
    if (r) r = fp4fuse::quantize(x_view, fp4fuse::quantized_matrix<F, L>{d_px, K / 2, d_sx, lx}, fp4fuse::global_scale::per_tensor{d_S});
    // 2. SwiGLU + NVFP4 from the interleaved gate/up matrix.
    if (r) r = fp4fuse::swiglu_quantize<GU>(gu_view, fp4fuse::quantized_matrix<F, L>{d_ph, I / 2, d_sh, lh}, fp4fuse::global_scale::per_tensor{d_Sh}, fp4fuse::activation::swiglu{});
    if (!r) {
      std::fprintf(stderr, "%s\n", r.message());
      return 1;
    }
    if (!cuda_ok(cudaDeviceSynchronize(), "kernels")) return 1;
    quantized dx{std::vector<unsigned char>(hx.packed.size()), std::vector<unsigned char>(hx.scales.size())};
    quantized dh{std::vector<unsigned char>(hh.packed.size()), std::vector<unsigned char>(hh.scales.size())};
    if (!cuda_ok(cudaMemcpy(dx.packed.data(), d_px, dx.packed.size(), cudaMemcpyDeviceToHost), "download") ||
        !cuda_ok(cudaMemcpy(dx.scales.data(), d_sx, dx.scales.size(), cudaMemcpyDeviceToHost), "download") ||
        !cuda_ok(cudaMemcpy(dh.packed.data(), d_ph, dh.packed.size(), cudaMemcpyDeviceToHost), "download") ||
        !cuda_ok(cudaMemcpy(dh.scales.data(), d_sh, dh.scales.size(), cudaMemcpyDeviceToHost), "download")) {
      return 1;
    }
    identical_x = dx.packed == hx.packed && dx.scales == hx.scales;
    identical_h = dh.packed == hh.packed && dh.scales == hh.scales;
    for (void* p : {static_cast<void*>(d_x), static_cast<void*>(d_gu), static_cast<void*>(d_px), static_cast<void*>(d_sx),
                    static_cast<void*>(d_ph), static_cast<void*>(d_sh), static_cast<void*>(d_S), static_cast<void*>(d_amax),
                    static_cast<void*>(d_Sh)})
      if (!cuda_ok(cudaFree(p), "cudaFree")) return 1;
  } else {
    std::printf("fp4fuse %s quickstart: no CUDA device here, so the same functions ran on the host only\n",
                FP4FUSE_VERSION_STRING);
  }
  std::printf("\n| step | shape | bytes in | bytes out | rel. RMS error | %s |\n", gpu ? "GPU == host, every byte" : "ran on");
  std::printf("|---|---|---:|---:|---:|---|\n");
  std::printf("| quantize NVFP4 | [%lld, %lld] bf16 | %lld | %lld | %.4f | %s |\n", (long long)M, (long long)K,
              (long long)(M * K * 2), (long long)(hx.packed.size() + hx.scales.size()), rms_error(hx, xf, M, K, Sx),
              gpu ? (identical_x ? "yes" : "NO") : "host");
  std::printf("| SwiGLU + NVFP4 | [%lld, %lld] bf16 gate/up | %lld | %lld | %.4f | %s |\n", (long long)M, (long long)(2 * I),
              (long long)(M * 2 * I * 2), (long long)(hh.packed.size() + hh.scales.size()), rms_error(hh, h, M, I, Sh),
              gpu ? (identical_h ? "yes" : "NO") : "host");
  return identical_x && identical_h ? 0 : 1;
}
