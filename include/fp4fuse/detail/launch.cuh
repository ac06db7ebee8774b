#pragma once
// The launchers' one argument-validation path (`checker`), the mapping of CUDA errors to
// `status`, and the checked launch. Host code; not part of the public API.
#include <cuda_runtime_api.h>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
#include "fp4fuse/format.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/matrix_view.cuh"
#include "fp4fuse/quantized_matrix.cuh"
#include "fp4fuse/status.hpp"

namespace fp4fuse::detail {

inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

/// The one validation path of every launcher: each check records the first failure as a result
/// whose sentence names the entry point, the argument and the requirement. Nothing here touches
/// the GPU, so a launcher validates completely before its first CUDA call.
class checker {
 public:
  explicit checker(const char* entry_point) : entry_(entry_point) {}

  /// False once a check failed.
  explicit operator bool() const { return !failed_; }
  /// The first failure (or ok).
  const result& outcome() const { return result_; }

  /// `ok` or: "<entry>: <sentence>" with status s.
  template <class... Args>
  checker& require(bool ok, status s, const char* format, Args... args) {
    if (!ok && !failed_) {
      failed_ = true;
      char sentence[200];
      if constexpr (sizeof...(Args) == 0) {
        std::snprintf(sentence, sizeof sentence, "%s", format);
      } else {
        std::snprintf(sentence, sizeof sentence, format, args...);
      }
      result_ = result::with(s, "%s: %s", entry_, sentence);
    }
    return *this;
  }
  checker& not_null(const void* p, const char* name) { return require(p != nullptr, status::null_pointer, "%s is null", name); }
  checker& aligned(const void* p, std::size_t bytes, const char* name, const char* why) {
    return require(p == nullptr || is_aligned(p, bytes), status::misaligned_pointer, "%s (%p) must be %zu-byte aligned (%s)", name, p,
                   bytes, why);
  }

  /// A row-major input/output matrix of T: data non-null and 16-byte aligned, rows >= 0,
  /// cols >= min_cols and a multiple of `multiple` (why: `why`), ld >= cols and a whole number of
  /// 16-byte vectors.
  template <class T>
  checker& matrix(const matrix_view<T>& m, const char* name, cuda::std::int64_t min_cols, cuda::std::int64_t multiple, const char* why) {
    using E = cuda::std::remove_const_t<T>;
    char field[64];
    std::snprintf(field, sizeof field, "%s.data", name);
    not_null(m.data, field);
    aligned(m.data, 16, field, "16-byte vector accesses");
    require(m.rows >= 0, status::bad_shape, "%s.rows = %" PRId64 " must be >= 0", name, static_cast<std::int64_t>(m.rows));
    require(m.cols >= min_cols, status::bad_shape, "%s.cols = %" PRId64 " must be >= %" PRId64, name, static_cast<std::int64_t>(m.cols),
            static_cast<std::int64_t>(min_cols));
    require(m.cols % multiple == 0, status::not_multiple_of_block, "%s.cols = %" PRId64 " must be a multiple of %" PRId64 " (%s)", name,
            static_cast<std::int64_t>(m.cols), static_cast<std::int64_t>(multiple), why);
    require(m.ld >= m.cols && m.ld % vec_elems<E> == 0, status::bad_leading_dimension,
            "%s.ld = %" PRId64 " must be >= %s.cols = %" PRId64 " and a multiple of %d elements (16 bytes of %s)", name,
            static_cast<std::int64_t>(m.ld), name, static_cast<std::int64_t>(m.cols), vec_elems<E>, element_name<E>());
    return *this;
  }

  /// A quantized matrix: packed and scales non-null, packed aligned to one block's bytes (one
  /// store or load per block), scale columns > 0, ld_packed >= cols / 2 and a multiple of a
  /// block's bytes.
  template <class Format, class Layout, class Byte>
  checker& quantized(const quantized_matrix<Format, Layout, Byte>& q, const char* name) {
    constexpr int block_bytes = Format::block_size / 2;
    char field[64];
    std::snprintf(field, sizeof field, "%s.packed", name);
    not_null(q.packed, field);
    aligned(q.packed, block_bytes, field, Format::block_size == 16 ? "one 8-byte access per NVFP4 block" : "one 16-byte access per MXFP4 block");
    std::snprintf(field, sizeof field, "%s.scales", name);
    not_null(q.scales, field);
    require(q.layout.rows >= 0, status::bad_shape, "%s.layout.rows = %" PRId64 " must be >= 0", name,
            static_cast<std::int64_t>(q.layout.rows));
    require(q.layout.scale_cols > 0, status::bad_shape, "%s.layout.scale_cols = %" PRId64 " must be > 0 (columns / %d)", name,
            static_cast<std::int64_t>(q.layout.scale_cols), Format::block_size);
    require(q.ld_packed >= q.cols() / 2 && q.ld_packed % block_bytes == 0, status::bad_leading_dimension,
            "%s.ld_packed = %" PRId64 " bytes must be >= cols / 2 = %" PRId64 " and a multiple of %d (one %s block)", name,
            static_cast<std::int64_t>(q.ld_packed), static_cast<std::int64_t>(q.cols() / 2), block_bytes,
            Format::block_size == 16 ? "NVFP4" : "MXFP4");
    return *this;
  }

  /// The global scale's pointer (fits_global_scale has checked the kind against the format at
  /// compile time): per_tensor's S and per_group's S non-null and 4-byte aligned; per_row's S_r
  /// the same, with one CTA per padded row of `rows` within the grid.
  checker& scale(global_scale::none) { return *this; }
  checker& scale(global_scale::per_tensor s) {
    not_null(s.encode_scale, "scale.encode_scale (NVFP4's S, device memory)");
    return aligned(s.encode_scale, 4, "scale.encode_scale", "a float");
  }
  checker& scale(global_scale::per_group s) {
    not_null(s.encode_scales, "scale.encode_scales (one S per group, device memory)");
    return aligned(s.encode_scales, 4, "scale.encode_scales", "floats");
  }
  checker& scale(global_scale::per_row s, cuda::std::int64_t padded_rows) {
    not_null(s.encode_scales, "scale.encode_scales (one S per row, device memory)");
    aligned(s.encode_scales, 4, "scale.encode_scales", "floats");
    return grid(padded_rows, "padded rows of the output layout (one CTA each)");
  }

  /// 32-bit grids: `threads` below 2^31 - 256.
  checker& grid(cuda::std::int64_t threads, const char* what) {
    return require(threads < (cuda::std::int64_t(1) << 31) - 256, status::bad_shape,
                   "%s = %" PRId64 " exceeds the kernel's 31-bit indexing", what, static_cast<std::int64_t>(threads));
  }

 private:
  const char* entry_;
  bool failed_ = false;
  result result_{};
};

/// The status of a CUDA error met before or while launching: no_device for a machine without a
/// usable GPU or driver, unsupported_architecture for a missing kernel image, cuda_error otherwise.
inline result cuda_failure(cudaError_t err, const char* entry_point = "fp4fuse") {
  (void)cudaGetLastError();  // the error is reported here, not left for the caller's next check
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorDevicesUnavailable) {
    // The runtime reports a missing driver as an insufficient one: tell the two apart.
    int driver = 0;
    const bool no_driver = err == cudaErrorInsufficientDriver && (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0);
    (void)cudaGetLastError();
    result r = no_driver ? result::with(status::no_device, "%s: no usable CUDA device (no CUDA driver is installed)", entry_point)
               : err == cudaErrorInsufficientDriver
                   ? result::with(status::no_device, "%s: no usable CUDA device (the driver supports CUDA %d.%d; this build needs %d.%d or newer)",
                                  entry_point, driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10)
                   : result::with(status::no_device, "%s: no usable CUDA device (%s)", entry_point, cudaGetErrorString(err));
    r.cuda = err;
    return r;
  }
  if (err == cudaErrorInvalidDeviceFunction || err == cudaErrorNoKernelImageForDevice) {
    result r = result::with(status::unsupported_architecture, "%s: this GPU has no kernel image in this build (%s); add its -gencode target",
                            entry_point, cudaGetErrorString(err));
    r.cuda = err;
    return r;
  }
  result r = result::with(status::cuda_error, "%s: %s", entry_point, cudaGetErrorString(err));
  r.cuda = err;
  return r;
}

/// ok when the current device has an image of `kernel` in this build.
template <class Kernel>
inline result check_kernel_image(Kernel* kernel, const char* entry_point = "fp4fuse") {
  cudaFuncAttributes attributes{};
  const cudaError_t err = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
  return err == cudaSuccess ? result{} : cuda_failure(err, entry_point);
}

/// After a launch: ok, or the launch's CUDA error.
inline result launch_result(const char* entry_point = "fp4fuse") {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? result{} : cuda_failure(err, entry_point);
}

/// Checks the kernel image, launches `kernel<<<blocks, threads, 0, stream>>>(args...)` and checks
/// the launch: every standalone kernel starts this way, after its validation.
template <class... Params, class... Args>
inline result launch(void (*kernel)(Params...), cuda::std::int64_t blocks, int threads, cudaStream_t stream, const char* entry_point,
                     Args&&... args) {
  if (result r = check_kernel_image(kernel, entry_point); !r) return r;
  kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(static_cast<Args&&>(args)...);
  return launch_result(entry_point);
}

}  // namespace fp4fuse::detail

