#pragma once
// Helpers for the standalone-kernel tests: guarded device buffers (poisoned, with a canary zone
// after the allocation), matrices of adversarial data, host twins.
#include <fp4fuse/fp4fuse.cuh>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "../gpu_support.cuh"
#include "../test_support.hpp"

namespace fp4fuse_test {

/// Whether a GPU case of the sm_90a GEMM engine runs its subject: `runs` is the library's answer
/// (fp4fuse::gemm::detail::wgmma_runs_here()). Such a case must not pass without running the
/// engine: on an sm_90 device, the engine's target, it FAILs (a build without an sm_90a image, or
/// a probe that failed); on another GPU, where the engine does not exist, the case warns and
/// returns (Catch2 2.x has no skip).
inline bool sm90_engine_here(bool runs, const char* untested) {
  if (runs) return true;
  int device = 0, major = 0, minor = 0;
  const bool known = cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                     cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
  (void)cudaGetLastError();
  if (known && major == 9 && minor == 0) {
    FAIL("an sm_90 GPU, but the wgmma engine does not run here: this build has no sm_90a image (gpu_targets needs "
         "arch=compute_90a,code=sm_90a), or the library's one-thread probe failed (an earlier CUDA error): "
         << untested);
  }
  WARN("not an sm_90 GPU: the sm_90a engine does not run here; " << untested);
  return false;
}

/// The global-scale descriptor of a test written for both formats: NVFP4's S in device memory
/// (`per_tensor`), or `none` for MXFP4.
template <class Format>
auto tensor_scale(const float* d_S) {
  if constexpr (Format::has_global_scale) {
    return fp4fuse::global_scale::per_tensor{d_S};
  } else {
    return fp4fuse::global_scale::none{};
  }
}

/// A matrix shape of the quantize and dequantize kernel tests: rows, columns, and the elements
/// the leading dimension adds.
struct matrix_shape {
  std::int64_t rows, cols, ld_extra;
};
/// Their shapes: one row, a partial 128-row scale tile, odd block counts, K = 7168.
inline constexpr matrix_shape kernel_shapes[] = {{1, 16, 0},      {1, 64, 8},       {3, 48, 0},  {130, 80, 16},
                                                 {257, 272, 0}, {129, 2064, 24}, {64, 7168, 0}};

constexpr unsigned char poison = 0xA5;
constexpr std::size_t guard_bytes = 256;

/// A device allocation of `bytes` plus a poisoned guard zone; `check_guard` proves nothing was
/// written past the end.
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) : bytes_(bytes) {
    FP4FUSE_TEST_CUDA(cudaMalloc(&ptr_, bytes + guard_bytes));
    FP4FUSE_TEST_CUDA(cudaMemset(ptr_, poison, bytes + guard_bytes));
  }
  ~device_buffer() {
    // A destructor cannot fail the test: a failed free (a sticky error from an earlier launch,
    // which that launch's check reports) is printed.
    if (const cudaError_t e = cudaFree(ptr_); e != cudaSuccess) std::fprintf(stderr, "device_buffer: cudaFree: %s\n", cudaGetErrorString(e));
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> h(bytes_);
    FP4FUSE_TEST_CUDA(cudaMemcpy(h.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
    return h;
  }
  void upload(const void* src, std::size_t n) { FP4FUSE_TEST_CUDA(cudaMemcpy(ptr_, src, n, cudaMemcpyHostToDevice)); }
  bool guard_intact() const {
    std::vector<unsigned char> g(guard_bytes);
    FP4FUSE_TEST_CUDA(cudaMemcpy(g.data(), static_cast<char*>(ptr_) + bytes_, guard_bytes, cudaMemcpyDeviceToHost));
    for (unsigned char c : g) {
      if (c != poison) return false;
    }
    return true;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

/// A per-row quantizer's three outputs against the host's: the packed bytes, the scale bytes and
/// the row scales S_r (their float bits), each with its guard zone intact.
inline void check_row_scaled_outputs(const device_buffer& packed, const std::vector<unsigned char>& want_packed, const device_buffer& scales,
                                     const std::vector<unsigned char>& want_scales, const device_buffer& row_S, const std::vector<float>& want_S) {
  std::vector<unsigned char> want_rs(want_S.size() * 4);
  std::memcpy(want_rs.data(), want_S.data(), want_rs.size());
  CHECK(packed.download() == want_packed);
  CHECK(scales.download() == want_scales);
  CHECK(row_S.download() == want_rs);
  CHECK(packed.guard_intact());
  CHECK(scales.guard_intact());
  CHECK(row_S.guard_intact());
}

enum class row_kind { random_wide, zero, specials, ties, outlier, count };

/// Fills a [rows, ld] matrix of floats: rows cycle through the kinds; columns beyond `cols` get
/// values that would corrupt results if read (NaN).
inline std::vector<float> make_matrix(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::mt19937_64& g,
                                      float row_scale_range = 20.0f) {
  std::vector<float> m(static_cast<std::size_t>(rows * ld), std::numeric_limits<float>::quiet_NaN());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto kind = static_cast<row_kind>(r % static_cast<int>(row_kind::count));
    const float scale = std::ldexp(1.0f, static_cast<int>(u(g) * row_scale_range));
    for (std::int64_t c = 0; c < cols; ++c) {
      float v = 0.0f;
      switch (kind) {
        case row_kind::random_wide: v = random_magnitude(g, -8, 8) * scale; break;
        case row_kind::zero: v = (g() & 1) ? -0.0f : 0.0f; break;
        case row_kind::specials: {
          const int pick = static_cast<int>(g() % 16);
          v = pick == 0 ? std::numeric_limits<float>::quiet_NaN()
              : pick == 1 ? std::numeric_limits<float>::infinity()
              : pick == 2 ? -std::numeric_limits<float>::infinity()
                          : u(g) * scale;
          break;
        }
        case row_kind::ties: {
          static const float b[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
          v = b[g() % 8] * ((g() & 1) ? -1.0f : 1.0f) * scale;
          break;
        }
        case row_kind::outlier: v = (g() % 64 == 0) ? 1e4f * scale : u(g) * scale; break;
        default: break;
      }
      m[static_cast<std::size_t>(r * ld + c)] = v;
    }
  }
  return m;
}

/// Replaces every NaN and Inf of `m` by a uniform value in [-range, range] (a matrix whose maximum
/// is a finite value, for the output-amax tests).
inline void replace_nonfinite(std::vector<float>& m, std::mt19937_64& g, float range) {
  std::uniform_real_distribution<float> fill(-range, range);
  for (auto& v : m)
    if (!std::isfinite(v)) v = fill(g);
}

/// A random per-column bias in [-2, 2] for a [rows, cols] gate/up matrix, and the matrix with it
/// added in fp32 where `apply` (what the epilogues' bias must equal); without `apply` the matrix
/// is returned unchanged (the bias is still drawn, so the random stream does not depend on it).
struct column_bias_case {
  std::vector<float> bias, biased;
};
inline column_bias_case make_column_bias(const std::vector<float>& m, std::int64_t rows, std::int64_t cols, std::mt19937_64& g,
                                         bool apply) {
  column_bias_case b{std::vector<float>(static_cast<std::size_t>(cols)), m};
  std::uniform_real_distribution<float> ub(-2.0f, 2.0f);
  for (auto& v : b.bias) v = ub(g);
  if (apply)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) b.biased[static_cast<std::size_t>(r * cols + c)] += b.bias[static_cast<std::size_t>(c)];
  return b;
}

/// Converts a float matrix to T (round to nearest even), and back to float: what the kernel sees.
template <class T>
std::vector<T> to_elements(const std::vector<float>& f) {
  std::vector<T> out(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) out[i] = fp4fuse::detail::from_float<T>(f[i]);
  return out;
}
template <class T>
float as_float(T v) {
  return fp4fuse::detail::to_float(v);
}

/// Counts elements whose bytes differ, treating any two NaNs as equal (NaN payloads differ between
/// host and device arithmetic). Poisoned gaps must match byte for byte.
template <class T>
std::size_t same_elements_nan_equal(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want) {
  if (got.size() != want.size()) return got.size() + want.size();
  std::size_t bad = 0;
  for (std::size_t i = 0; i + sizeof(T) <= got.size(); i += sizeof(T)) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
    T a, b;
    std::memcpy(&a, &got[i], sizeof(T));
    std::memcpy(&b, &want[i], sizeof(T));
    const float fa = fp4fuse::detail::to_float(a), fb = fp4fuse::detail::to_float(b);
    if (!(fa != fa && fb != fb)) ++bad;
  }
  return bad;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bf16";
  else if constexpr (std::is_same_v<T, __half>) return "f16";
  else return "f32";
}

}  // namespace fp4fuse_test
