#pragma once
/// \file launch.cuh
/// The launch and validation helpers of every fp4fuse launcher, public so that kernels built on
/// the library (the GEMM engine in fp4fuse/gemm/, a consumer's own launcher) refuse bad input and
/// report CUDA errors the same way: `argument_checker` (every argument checked before the first
/// CUDA call, the first failure a `result` whose sentence names the launcher, the argument and the
/// requirement), `cuda_failure` (a CUDA error as a `result`: no device, no kernel image, other),
/// `check_kernel_image` (before a launch) and `launch_result` (after it), and `is_aligned`.
/// Host code.
#include <cuda_runtime_api.h>

#include <cuda/std/cstdint>
#include <cuda/std/limits>
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

namespace fp4fuse {

/// Whether the address `p` is a multiple of `bytes` (> 0).
/// \code
/// if (!fp4fuse::is_aligned(d_bias, 8)) { /* float2 loads would fault */ }
/// \endcode
inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

/// The one validation path of every launcher (the library's and the GEMM engine's): each check
/// records the first failure as a `result` whose sentence names the entry point, the argument and
/// the requirement; later checks of a failed checker record nothing. Nothing here touches the GPU,
/// so a launcher validates completely before its first CUDA call. Every check returns the checker,
/// so checks chain.
/// \code
/// inline fp4fuse::result my_launcher(const fp4fuse::matrix_view<const __nv_bfloat16>& x, const float* d_bias, int experts) {
///   fp4fuse::argument_checker c("my_launcher");
///   c.matrix(x, "x", 16, 16, "NVFP4 blocks").aligned(d_bias, 8, "d_bias", "float2 loads");
///   c.require(experts > 0, fp4fuse::status::bad_shape, "experts = %d must be > 0", experts);
///   if (!c) return c.outcome();  // "my_launcher: x.cols = 24 must be a multiple of 16 (NVFP4 blocks)"
///   // ... launch, then fp4fuse::launch_result("my_launcher")
///   return {};
/// }
/// \endcode
class argument_checker {
 public:
  /// The column count `matrix` (by default) and `quantized` accept: below 2^31, so that a
  /// kernel's column offsets (a block index times the block size, in 32 bits) cannot wrap.
  static constexpr cuda::std::int64_t column_limit = cuda::std::int64_t{1} << 31;
  /// `matrix`'s `max_cols` for a kernel whose column offsets are 64-bit (`amax`).
  static constexpr cuda::std::int64_t no_column_limit = cuda::std::numeric_limits<cuda::std::int64_t>::max();

  /// A checker for the launcher `entry_point` (the first words of every sentence; kept by pointer).
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");  // its sentences read "my_launcher: ..."
  /// \endcode
  explicit argument_checker(const char* entry_point) : entry_(entry_point) {}

  /// False once a check failed.
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// if (!c.not_null(d_bias, "d_bias")) { /* refused: c.outcome() says why */ }
  /// \endcode
  explicit operator bool() const { return !failed_; }
  /// The first failure (or ok).
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// const fp4fuse::result r = c.not_null(d_bias, "d_bias").outcome();  // status::null_pointer, "my_launcher: d_bias is null"
  /// \endcode
  const result& outcome() const { return result_; }

  /// Records "<entry>: <sentence>" with status `s` unless `ok`; `format` is a printf format for
  /// `args` (the sentence is cut at 199 characters).
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// const int experts = 0;
  /// c.require(experts > 0, fp4fuse::status::bad_shape, "experts = %d must be > 0", experts);  // "my_launcher: experts = 0 must be > 0"
  /// \endcode
  template <class... Args>
  argument_checker& require(bool ok, status s, const char* format, Args... args) {
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
  /// `p` is not null (status::null_pointer).
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.not_null(d_amax, "d_amax");  // a null d_amax: "my_launcher: d_amax is null"
  /// \endcode
  argument_checker& not_null(const void* p, const char* name) { return require(p != nullptr, status::null_pointer, "%s is null", name); }
  /// `p` is null or `bytes`-aligned (status::misaligned_pointer); `why` says what needs it.
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.aligned(d_bias, 8, "d_bias", "float2 loads");  // a null d_bias passes (not_null refuses it where it must be set)
  /// \endcode
  argument_checker& aligned(const void* p, std::size_t bytes, const char* name, const char* why) {
    return require(p == nullptr || is_aligned(p, bytes), status::misaligned_pointer, "%s (%p) must be %zu-byte aligned (%s)", name, p,
                   bytes, why);
  }

  /// A row-major input/output matrix of T: data non-null and 16-byte aligned, rows >= 0,
  /// cols >= min_cols, below `max_cols` (default `column_limit`, 2^31: the kernels' 32-bit column
  /// offsets) and a multiple of `multiple` (why: `why`), ld >= cols and a whole number of 16-byte
  /// vectors.
  /// \code
  /// const __nv_bfloat16* d_x = nullptr;  // [M, K] in device memory
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.matrix(fp4fuse::matrix_view<const __nv_bfloat16>{d_x, M, K, K}, "x", 16, 16, "NVFP4 blocks");
  /// // K = 24 would read "my_launcher: x.cols = 24 must be a multiple of 16 (NVFP4 blocks)"
  /// \endcode
  template <class T>
  argument_checker& matrix(const matrix_view<T>& m, const char* name, cuda::std::int64_t min_cols, cuda::std::int64_t multiple, const char* why,
                           cuda::std::int64_t max_cols = column_limit) {
    using E = cuda::std::remove_const_t<T>;
    char field[64];
    std::snprintf(field, sizeof field, "%s.data", name);
    not_null(m.data, field);
    aligned(m.data, 16, field, "16-byte vector accesses");
    require(m.rows >= 0, status::bad_shape, "%s.rows = %" PRId64 " must be >= 0", name, static_cast<std::int64_t>(m.rows));
    require(m.cols >= min_cols, status::bad_shape, "%s.cols = %" PRId64 " must be >= %" PRId64, name, static_cast<std::int64_t>(m.cols),
            static_cast<std::int64_t>(min_cols));
    require(m.cols < max_cols, status::bad_shape, "%s.cols = %" PRId64 " must be below %" PRId64 " (the kernel's 32-bit column offsets)",
            name, static_cast<std::int64_t>(m.cols), static_cast<std::int64_t>(max_cols));
    require(m.cols % multiple == 0, status::not_multiple_of_block, "%s.cols = %" PRId64 " must be a multiple of %" PRId64 " (%s)", name,
            static_cast<std::int64_t>(m.cols), static_cast<std::int64_t>(multiple), why);
    require(m.ld >= m.cols && m.ld % detail::vec_elems<E> == 0, status::bad_leading_dimension,
            "%s.ld = %" PRId64 " must be >= %s.cols = %" PRId64 " and a multiple of %d elements (16 bytes of %s)", name,
            static_cast<std::int64_t>(m.ld), name, static_cast<std::int64_t>(m.cols), detail::vec_elems<E>, detail::element_name<E>());
    return *this;
  }

  /// A quantized matrix: packed and scales non-null, packed aligned to one block's bytes (one
  /// store or load per block), scale columns > 0, cols below 2^31 (32-bit column offsets),
  /// ld_packed >= cols / 2 and a multiple of a block's bytes.
  /// \code
  /// const fp4fuse::quantized_matrix<fp4fuse::format::nvfp4<>, fp4fuse::scale_layout::swizzled_128x4> out{nullptr, K / 2, scales, {M, K / 16}};
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.quantized(out, "out");  // "my_launcher: out.packed is null"
  /// \endcode
  template <class Format, class Layout, class Byte>
  argument_checker& quantized(const quantized_matrix<Format, Layout, Byte>& q, const char* name) {
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
    require(q.cols() < column_limit, status::bad_shape, "%s has %" PRId64 " columns: below 2^31 is needed (32-bit column offsets)", name,
            static_cast<std::int64_t>(q.cols()));
    require(q.ld_packed >= q.cols() / 2 && q.ld_packed % block_bytes == 0, status::bad_leading_dimension,
            "%s.ld_packed = %" PRId64 " bytes must be >= cols / 2 = %" PRId64 " and a multiple of %d (one %s block)", name,
            static_cast<std::int64_t>(q.ld_packed), static_cast<std::int64_t>(q.cols() / 2), block_bytes,
            Format::block_size == 16 ? "NVFP4" : "MXFP4");
    return *this;
  }

  /// The global scale's pointer (the kind is checked against the format at compile time, where
  /// the launcher takes it): `none` has nothing to check; per_tensor's S and per_group's S non-null
  /// and 4-byte aligned.
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.scale(fp4fuse::global_scale::none{});           // MXFP4: nothing to check
  /// c.scale(fp4fuse::global_scale::per_tensor{d_S});  // a null d_S: "my_launcher: scale.encode_scale (NVFP4's S, device memory) is null"
  /// \endcode
  argument_checker& scale(global_scale::none) { return *this; }
  /// \copydoc scale(global_scale::none)
  argument_checker& scale(global_scale::per_tensor s) {
    not_null(s.encode_scale, "scale.encode_scale (NVFP4's S, device memory)");
    return aligned(s.encode_scale, 4, "scale.encode_scale", "a float");
  }
  /// \copydoc scale(global_scale::none)
  argument_checker& scale(global_scale::per_group s) {
    not_null(s.encode_scales, "scale.encode_scales (one S per group, device memory)");
    return aligned(s.encode_scales, 4, "scale.encode_scales", "floats");
  }
  /// per_row's S_r non-null and 4-byte aligned, with one CTA per padded row (`padded_rows`)
  /// within the grid.
  /// \code
  /// float* d_row_S = nullptr;  // M floats in device memory
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.scale(fp4fuse::global_scale::per_row{d_row_S}, fp4fuse::scale_layout::swizzled_128x4{M, K / 16}.padded_rows());
  /// \endcode
  argument_checker& scale(global_scale::per_row s, cuda::std::int64_t padded_rows) {
    not_null(s.encode_scales, "scale.encode_scales (one S per row, device memory)");
    aligned(s.encode_scales, 4, "scale.encode_scales", "floats");
    return grid(padded_rows, "padded rows of the output layout (one CTA each)");
  }

  /// 32-bit grids: `threads` below 2^31 - 256.
  /// \code
  /// fp4fuse::argument_checker c("my_launcher");
  /// c.grid(M * K / 16, "threads (one per NVFP4 block)");  // 2^31 or more: "my_launcher: threads ... exceeds the kernel's 31-bit indexing"
  /// \endcode
  argument_checker& grid(cuda::std::int64_t threads, const char* what) {
    return require(threads < (cuda::std::int64_t(1) << 31) - 256, status::bad_shape,
                   "%s = %" PRId64 " exceeds the kernel's 31-bit indexing", what, static_cast<std::int64_t>(threads));
  }

 private:
  const char* entry_;
  bool failed_ = false;
  result result_{};
};

/// The `result` of a CUDA error met before or while launching: status::no_device for a machine
/// without a usable GPU or driver (the sentence says which), status::unsupported_architecture for
/// a missing kernel image, status::cuda_error otherwise; `result::cuda` holds `err`. Clears the
/// runtime's last error, so the caller's next check does not see it again.
/// \code
/// if (const cudaError_t err = cudaMemsetAsync(d_amax, 0, 4, stream); err != cudaSuccess) {
///   const fp4fuse::result r = fp4fuse::cuda_failure(err, "my_launcher");  // what my_launcher returns
///   std::fprintf(stderr, "%s\n", r.message());                            // "my_launcher: ..."
/// }
/// \endcode
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

/// ok when the current device has an image of `kernel` in this build, else `cuda_failure` of the
/// runtime's answer (status::unsupported_architecture, or status::no_device without a GPU): what a
/// launcher checks before its launch, so that a missing `-gencode` target is a sentence.
/// \code
/// __global__ void fill(float* out) { out[threadIdx.x] = 0.0f; }
/// inline fp4fuse::result launch_fill(float* d_out, cudaStream_t stream) {
///   if (const fp4fuse::result r = fp4fuse::check_kernel_image(fill, "launch_fill"); !r) return r;  // no image for this GPU
///   fill<<<1, 32, 0, stream>>>(d_out);
///   return fp4fuse::launch_result("launch_fill");
/// }
/// \endcode
template <class Kernel>
inline result check_kernel_image(Kernel* kernel, const char* entry_point = "fp4fuse") {
  cudaFuncAttributes attributes{};
  const cudaError_t err = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
  return err == cudaSuccess ? result{} : cuda_failure(err, entry_point);
}

/// After a launch: ok, or `cuda_failure` of the launch's error (`cudaGetLastError`).
/// \code
/// __global__ void fill(float* out) { out[threadIdx.x] = 0.0f; }
/// inline fp4fuse::result launch_fill(float* d_out, int threads, cudaStream_t stream) {
///   fill<<<1, threads, 0, stream>>>(d_out);
///   return fp4fuse::launch_result("launch_fill");  // threads = 2048: "launch_fill: invalid configuration argument"
/// }
/// \endcode
inline result launch_result(const char* entry_point = "fp4fuse") {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? result{} : cuda_failure(err, entry_point);
}

namespace detail {
/// The calling thread in relaxed stream-capture mode while this lives, the caller's mode again
/// after: the library's own allocations and probes (the GPU probe, a grouped launch's unit
/// counter, the kept split-K workspace) may then run while a stream is captured in global mode,
/// which would refuse them and be invalidated by them. `status()`: the exchange's result; where it
/// failed, nothing is restored and the caller must not go on.
class relaxed_capture_mode {
 public:
  relaxed_capture_mode() : entered_(cudaThreadExchangeStreamCaptureMode(&mode_)) {}
  ~relaxed_capture_mode() {
    if (entered_ == cudaSuccess) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;
  cudaError_t status() const { return entered_; }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // before the exchange: the mode to enter; after: the caller's
  cudaError_t entered_;
};
}  // namespace detail

}  // namespace fp4fuse
