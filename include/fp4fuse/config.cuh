#pragma once
/// \file config.cuh
/// Project macros: function qualifiers, architecture predicates and toolkit checks.
/// Every other fp4fuse header includes this one first.

#include "fp4fuse/version.hpp"


#if !defined(__CUDACC__)
#  error "fp4fuse headers (.cuh) contain device code: compile them with nvcc (or clang in CUDA mode)."
#endif

// The toolkit version: nvcc defines __CUDACC_VER_*; clang in CUDA mode does not, but its CUDA
// wrapper headers include cuda.h, whose CUDA_VERSION is 1000 * major + 10 * minor.
#if defined(__CUDACC_VER_MAJOR__)
/// The CUDA toolkit's major version (nvcc's __CUDACC_VER_MAJOR__, or CUDA_VERSION under clang).
#  define FP4FUSE_CUDA_VERSION_MAJOR __CUDACC_VER_MAJOR__
/// The CUDA toolkit's minor version.
#  define FP4FUSE_CUDA_VERSION_MINOR __CUDACC_VER_MINOR__
#elif defined(__clang__) && defined(__CUDA__) && defined(CUDA_VERSION)
#  define FP4FUSE_CUDA_VERSION_MAJOR (CUDA_VERSION / 1000)
#  define FP4FUSE_CUDA_VERSION_MINOR (CUDA_VERSION % 1000 / 10)
#endif
#if !defined(FP4FUSE_CUDA_VERSION_MAJOR) || (FP4FUSE_CUDA_VERSION_MAJOR < 12) || \
    (FP4FUSE_CUDA_VERSION_MAJOR == 12 && FP4FUSE_CUDA_VERSION_MINOR < 8)
#  error "fp4fuse needs CUDA 12.8 or newer: it relies on cuda_fp4.h and on the E2M1 conversion instructions of PTX 8.7."
#endif

/// The C++ standard the host compiler implements (`_MSVC_LANG` under MSVC, `__cplusplus`
/// elsewhere); the C++17 check below compares it with 201703L.
#if defined(_MSVC_LANG)
#  define FP4FUSE_CPLUSPLUS _MSVC_LANG
#else
#  define FP4FUSE_CPLUSPLUS __cplusplus
#endif
#if FP4FUSE_CPLUSPLUS < 201703L
#  error "fp4fuse needs C++17 or newer: pass -std=c++17 to nvcc."
#endif

#include <cuda/version>
#if !defined(CCCL_MAJOR_VERSION) || CCCL_MAJOR_VERSION < 2 || (CCCL_MAJOR_VERSION == 2 && CCCL_MINOR_VERSION < 8)
#  error "fp4fuse needs CCCL 2.8 or newer: CUDA 12.9 and later ship it, CUDA 12.8 ships CCCL 2.7. With CUDA 12.8, put a newer CCCL's include directory (github.com/NVIDIA/cccl) ahead of the toolkit's with -I."
#endif

#if defined(__GNUC__) && !defined(__clang__) && (__GNUC__ < 9)
#  error "fp4fuse needs GCC 9 or newer as the host compiler for its C++17 support."
#endif

/// `__host__ __device__ __forceinline__`: every numeric building block.
#define FP4FUSE_HOST_DEVICE __host__ __device__ __forceinline__
/// `__device__ __forceinline__`: device-only helpers (PTX, shuffles).
#define FP4FUSE_DEVICE __device__ __forceinline__
/// `#pragma unroll` in device passes only (host compilers warn about the unknown pragma).
#if defined(__CUDA_ARCH__)
#  define FP4FUSE_UNROLL _Pragma("unroll")
#else
#  define FP4FUSE_UNROLL
#endif

// ---------------------------------------------------------------------------------------------
// Architecture predicates. Each is 0 in the host pass and in device passes that lack the feature,
// 1 otherwise. They are derived from the raw nvcc macros in one place (tests/config.cu checks
// them target by target).
//
// FP4FUSE_ARCH_HAS_E2M1_CVT: `cvt.rn.satfinite.e2m1x2.f32`, `cvt.rn.f16x2.e2m1x2` and the
//   UE8M0 `cvt` forms. PTX accepts them only on family- or arch-specific targets of compute
//   capability 10.0 and above (sm_100a/f, sm_103a, sm_110a/f, sm_120a/f, sm_121a). nvcc defines
//   __CUDA_ARCH_FAMILY_SPECIFIC__ for sm_90a too (value 900), so the value is compared, not just
//   tested for definition.
// FP4FUSE_ARCH_HAS_E4M3_CVT: `cvt.rn.satfinite.e4m3x2.f32` and `cvt.rn.f16x2.e4m3x2`, sm_89+.
// ---------------------------------------------------------------------------------------------
/// 1 in nvcc's device passes (`__CUDA_ARCH__` defined), 0 in the host pass.
#if defined(__CUDA_ARCH__)
#  define FP4FUSE_DEVICE_PASS 1
#else
#  define FP4FUSE_DEVICE_PASS 0
#endif

/// 1 in device passes whose target has the E2M1 and UE8M0 `cvt` instructions (family- or
/// arch-specific targets of compute capability 10.0 and above: sm_100a/f, sm_103a, sm_110a/f,
/// sm_120a/f, sm_121a); 0 on the host and on every other target, including sm_90a.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && (__CUDA_ARCH_FAMILY_SPECIFIC__ >= 1000)
#  define FP4FUSE_ARCH_HAS_E2M1_CVT 1
#else
#  define FP4FUSE_ARCH_HAS_E2M1_CVT 0
#endif

/// 1 in device passes for sm_89 and later (E4M3 `cvt` instructions); 0 on the host and on sm_80.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
#  define FP4FUSE_ARCH_HAS_E4M3_CVT 1
#else
#  define FP4FUSE_ARCH_HAS_E4M3_CVT 0
#endif

/// 1 in device passes for sm_90 and later (TMA bulk copies, clusters); 0 on the host and on
/// sm_80/sm_89.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#  define FP4FUSE_ARCH_HAS_SM90 1
#else
#  define FP4FUSE_ARCH_HAS_SM90 0
#endif

// The supported device targets: sm_80 and later (the device code uses sm_80 warp reductions).
// A plain `nvcc` without -gencode targets sm_75 in CUDA 13: say so instead of failing inside a
// header.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#  error "fp4fuse: device code needs sm_80 or newer (sm_80, sm_89, sm_90/sm_90a, sm_100a/f, sm_103a, sm_110a/f, sm_120a/f); this pass targets an older GPU, nvcc's default without -gencode. Pass e.g. -gencode arch=compute_90a,code=sm_90a (H100/H200)."
#endif

/// 1 in an sm_90a device pass (wgmma, setmaxnreg); 0 elsewhere.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_SPECIFIC__) && (__CUDA_ARCH_SPECIFIC__ == 900)
#  define FP4FUSE_ARCH_IS_SM90A 1
#else
#  define FP4FUSE_ARCH_IS_SM90A 0
#endif

#include <cstdio>

#if defined(__CUDA_ARCH__) && defined(__NVCC__) && !defined(__clang__)
/// NVVM's compile-time query of the device pass's float options (folded to a constant).
extern "C" __device__ int __nvvm_reflect(const char*);
#endif

namespace fp4fuse {

namespace detail {
/// The exact paths need IEEE float arithmetic: subnormals kept and division rounded to nearest.
/// `--use_fast_math` (or `-ftz=true`, `-prec-div=false`) changes both, and nvcc defines no macro
/// for it, so a device pass compiled that way prints this sentence and traps when a kernel reaches
/// fp4fuse code; every other build folds the test away (no instruction).
FP4FUSE_HOST_DEVICE void require_ieee_float_math() {
#if defined(__CUDA_ARCH__) && defined(__NVCC__) && !defined(__clang__)
  if (__nvvm_reflect("__CUDA_FTZ") != 0 || __nvvm_reflect("__CUDA_PREC_DIV") == 0) {
    printf("fp4fuse: this device code was compiled with --use_fast_math, -ftz=true or -prec-div=false (subnormals flushed, "
           "division approximated), so its conversions are not exact; compile fp4fuse code without them\n");
    __trap();
  }
#endif
}
}  // namespace detail

/// Which conversion path a device pass or the host uses; reported by `active_e2m1_path()` so
/// that tests and benchmarks can say what they measured.
enum class conversion_path : int {
  software = 0,  ///< branch-free integer/float emulation (host, sm_80, sm_89, sm_90, sm_90a)
  hardware = 1,  ///< native `cvt` instruction
};

/// The E2M1 conversion path compiled into the current pass (host: always software).
///
/// \code
/// __global__ void k(int* out) { *out = int(fp4fuse::active_e2m1_path()); }  // 1 on sm_100a
/// \endcode
FP4FUSE_HOST_DEVICE constexpr conversion_path active_e2m1_path() {
  return FP4FUSE_ARCH_HAS_E2M1_CVT ? conversion_path::hardware : conversion_path::software;
}

/// The E4M3 conversion path compiled into the current pass (host, sm_80: software).
/// \code
/// __global__ void k(int* out) { *out = int(fp4fuse::active_e4m3_path()); }  // 1 on sm_89 and later
/// \endcode
FP4FUSE_HOST_DEVICE constexpr conversion_path active_e4m3_path() {
  return FP4FUSE_ARCH_HAS_E4M3_CVT ? conversion_path::hardware : conversion_path::software;
}

}  // namespace fp4fuse

