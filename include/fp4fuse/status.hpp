#pragma once
/// \file status.hpp
/// What a host launcher returns. Launchers validate every argument before any CUDA call or write;
/// a refused call (a non-ok result) launched and wrote nothing, and `message()` names the argument
/// and the requirement that failed. The one exception is a CUDA failure of the kernel's launch
/// itself (status::cuda_error) in a launcher that clears an output on the stream first (`amax`'s
/// result, `gemm::moe::run_fused`'s scale tensor): that memset is queued after every other
/// preparation, just before the kernel. After validation, a launcher with nothing to write
/// (an empty output, M = 0) returns ok without any CUDA call; one with something to write needs a
/// device and returns `status::no_device` without one (`amax` always writes its result, 0 and
/// S = 1 for an empty input).
#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstdio>

namespace fp4fuse {

/// Why a launcher refused or failed.
enum class status : int {
  ok = 0,
  null_pointer,              ///< a required pointer is null
  misaligned_pointer,        ///< a pointer lacks the alignment the kernel's vector accesses need
  bad_shape,                 ///< rows or columns negative or zero where that is not allowed, too large, or inconsistent
  not_multiple_of_block,     ///< a width is not a multiple of what the kernel needs (block size, vector, granule)
  bad_leading_dimension,     ///< a leading dimension is smaller than the row or breaks alignment
  unsupported_architecture,  ///< the current GPU has no kernel image in this build (-gencode list)
  no_device,                 ///< no usable CUDA device (none present, or no driver)
  cuda_error,                ///< a CUDA call failed; see `result::cuda`
};

/// A sentence describing `s` (what `result::message()` says when no detail was recorded).
/// \code
/// const char* m = fp4fuse::status_message(fp4fuse::status::no_device);
/// \endcode
inline const char* status_message(status s) {
  switch (s) {
    case status::ok: return "ok";
    case status::null_pointer: return "fp4fuse: a required pointer is null";
    case status::misaligned_pointer: return "fp4fuse: a pointer is not aligned as the kernel requires";
    case status::bad_shape: return "fp4fuse: a shape is empty, negative, too large or inconsistent";
    case status::not_multiple_of_block: return "fp4fuse: a width is not a multiple of what the kernel needs";
    case status::bad_leading_dimension: return "fp4fuse: a leading dimension is smaller than the row or not a multiple of the vector width";
    case status::unsupported_architecture: return "fp4fuse: this GPU's architecture has no kernel image in this build (add its -gencode target)";
    case status::no_device: return "fp4fuse: no usable CUDA device (none present, or no driver)";
    case status::cuda_error: return "fp4fuse: a CUDA call failed";
  }
  return "fp4fuse: unknown status";
}

/// A launcher's outcome: the status, for `status::cuda_error` and `status::no_device` the CUDA
/// error, and a sentence naming the entry point, the argument and the requirement that failed.
/// \code
/// const fp4fuse::matrix_view<const __nv_bfloat16> x{d_x, M, K, K};
/// if (const fp4fuse::result r = fp4fuse::amax(x, d_amax, fp4fuse::global_scale::none{}); !r) std::fprintf(stderr, "%s\n", r.message());
/// \endcode
struct [[nodiscard]] result {
  /// What happened.
  status code = status::ok;
  /// The CUDA error behind `status::cuda_error` / `status::no_device` (cudaSuccess otherwise).
  cudaError_t cuda = cudaSuccess;
  /// The detailed sentence; empty when none was recorded.
  char detail[240] = {};

  /// True when the work was launched (or there was nothing to do).
  /// \code
  /// const fp4fuse::result r{fp4fuse::status::null_pointer};
  /// if (!r) std::fprintf(stderr, "%s\n", r.message());  // "fp4fuse: a required pointer is null"
  /// \endcode
  constexpr explicit operator bool() const { return code == status::ok; }
  /// The detailed sentence, or `status_message(code)` (with the CUDA error's text for CUDA
  /// failures) when none was recorded.
  /// \code
  /// std::puts(fp4fuse::result{}.message());                              // "ok"
  /// std::puts(fp4fuse::result{fp4fuse::status::no_device}.message());   // status_message(status::no_device)
  /// \endcode
  const char* message() const {
    if (detail[0] != '\0') return detail;
    return code == status::cuda_error ? cudaGetErrorString(cuda) : status_message(code);
  }
  /// A result with a printf-formatted sentence.
  /// \code
  /// const fp4fuse::result r = fp4fuse::result::with(fp4fuse::status::bad_shape, "my_launcher: experts = %d must be > 0", 0);
  /// \endcode
  static result with(status s, const char* format, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
  {
    result r;
    r.code = s;
    va_list args;
    va_start(args, format);
    std::vsnprintf(r.detail, sizeof r.detail, format, args);
    va_end(args);
    return r;
  }
};

}  // namespace fp4fuse
