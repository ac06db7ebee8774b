#pragma once
/// \file status.hpp
/// What a host launcher returns. Launchers validate every argument before touching memory; a
/// non-ok result means nothing was launched and nothing was written.
#include <cuda_runtime_api.h>

namespace fp4fuse {

/// Why a launcher refused or failed.
enum class status : int {
  ok = 0,
  null_pointer,              ///< a required pointer is null
  misaligned_pointer,        ///< a pointer lacks the alignment the kernel's vector accesses need
  bad_shape,                 ///< rows or columns negative or zero where that is not allowed, or too large
  not_multiple_of_block,     ///< K (or I) is not a multiple of the block size (16 NVFP4, 32 MXFP4)
  bad_leading_dimension,     ///< a leading dimension is smaller than the row or breaks alignment
  unsupported_architecture,  ///< the current GPU has no kernel image in this build (-gencode list)
  cuda_error,                ///< a CUDA call failed; see `result::cuda`
};

/// A launcher's outcome: the status and, for `status::cuda_error`, the CUDA error.
struct [[nodiscard]] result {
  status code = status::ok;
  cudaError_t cuda = cudaSuccess;
  /// True when the kernel was launched.
  constexpr explicit operator bool() const { return code == status::ok; }
  /// A sentence for logs.
  const char* message() const;
};

/// A sentence describing `s`.
/// \code
/// if (auto r = fp4fuse::quantize<...>(...); !r) std::fprintf(stderr, "%s\n", r.message());
/// \endcode
inline const char* status_message(status s) {
  switch (s) {
    case status::ok: return "ok";
    case status::null_pointer: return "fp4fuse: a required pointer is null";
    case status::misaligned_pointer: return "fp4fuse: a pointer is not aligned as the kernel requires (16 bytes for inputs, 8 for packed outputs)";
    case status::bad_shape: return "fp4fuse: the matrix shape is empty, negative or too large";
    case status::not_multiple_of_block: return "fp4fuse: the number of columns is not a multiple of the block size (16 for NVFP4, 32 for MXFP4)";
    case status::bad_leading_dimension: return "fp4fuse: a leading dimension is smaller than the row length or not a multiple of the vector width";
    case status::unsupported_architecture: return "fp4fuse: this GPU's architecture has no kernel image in this build (add its -gencode target)";
    case status::cuda_error: return "fp4fuse: a CUDA call failed";
  }
  return "fp4fuse: unknown status";
}

inline const char* result::message() const {
  return code == status::cuda_error ? cudaGetErrorString(cuda) : status_message(code);
}

}  // namespace fp4fuse
