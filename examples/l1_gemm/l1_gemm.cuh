#pragma once
// The MoE layer's first GEMM and its three output flows, as the L1 example runs them:
//
//   D = X[T, H] * W[2I, H]^T   (W stored like nn.Linear's weight: row n holds output column n,
//                               gate/up interleaved in granules of 8: rows 16g..16g+7 gate,
//                               16g+8..16g+15 the matching up rows)
//   flow 1: D as interleaved BF16 [T, 2I], then the standalone swiglu_quantize kernel
//   flow 2: compact BF16 SwiGLU output [T, I] from the epilogue, then the standalone quantize kernel
//   flow 3: SwiGLU -> NVFP4 in the GEMM epilogue: packed E2M1 [T, I/2] + 128x4-swizzled E4M3 scales
//
// All three quantize with the static global encode scale S in device memory (as serving engines
// do with a calibrated activation scale) and TransformerEngine's recipe, on the library's GEMM
// engine (fp4fuse/gemm/: the sm_90a TMA + wgmma kernels or the portable mma.sync kernel).
#include <type_traits>

#include <fp4fuse/fp4fuse.cuh>
#include <fp4fuse/gemm/dense.cuh>
#include <fp4fuse/gemm/epilogues.cuh>

namespace l1_gemm {

using format = fp4fuse::format::nvfp4<>;
using layout = fp4fuse::scale_layout::swizzled_128x4;
using gate_up = fp4fuse::gate_up::interleaved<8>;

using fp4fuse::gemm::engine;
using fp4fuse::gemm::engine_name;
using fp4fuse::gemm::gemm;
using fp4fuse::gemm::index_t;
using fp4fuse::gemm::resolve;
using fp4fuse::gemm::store_bf16;
using fp4fuse::gemm::swiglu_bf16;
using fp4fuse::gemm::swiglu_nvfp4;
namespace sm90 = fp4fuse::gemm::sm90;

/// The three flows, as compile-time tags.
namespace flow {
struct interleaved_bf16 {};  ///< flow 1
struct compact_bf16 {};      ///< flow 2
/// Flow 3; `intermediate::bf16` rounds act * up to BF16 before quantizing (bit-identical to flow 2).
template <class Intermediate = fp4fuse::intermediate::fp32>
struct fused_nvfp4 {};
}  // namespace flow

template <class Flow>
struct fused_traits;
template <class Intermediate>
struct fused_traits<flow::fused_nvfp4<Intermediate>> {
  using intermediate = Intermediate;
};

/// One problem's device tensors. Flow 1 needs `gate_up`, flow 2 needs `h`; all need the NVFP4
/// outputs and S.
struct problem {
  const __nv_bfloat16* x = nullptr;  ///< [T, H], 16-byte aligned
  const __nv_bfloat16* w = nullptr;  ///< [2I, H], 16-byte aligned
  int T = 0, H = 0, I = 0;           ///< T >= 1, H a multiple of 8, I a multiple of 16
  __nv_bfloat16* gate_up = nullptr;  ///< flow 1's [T, 2I] BF16 intermediate
  __nv_bfloat16* h = nullptr;        ///< flow 2's [T, I] BF16 intermediate
  std::uint8_t* packed = nullptr;    ///< [T, I / 2] E2M1, 8-byte aligned
  std::uint8_t* scales = nullptr;    ///< layout{T, I / 16}.size_bytes() bytes, padding written as 0x00
  const float* global_encode_scale = nullptr;  ///< S, device memory
};

namespace detail {

inline fp4fuse::result validate_problem(const problem& p) {
  using fp4fuse::status;
  if (p.packed == nullptr || p.scales == nullptr || p.global_encode_scale == nullptr) return {status::null_pointer};
  if (p.T < 1 || p.H < 8 || p.I < 16) return {status::bad_shape};
  if (p.I % 16 != 0 || p.H % 8 != 0) return {status::not_multiple_of_block};
  if (p.I > (1 << 29) / 2 || static_cast<std::int64_t>(p.T) * p.I > (std::int64_t(1) << 40)) return {status::bad_shape};
  if (!fp4fuse::is_aligned(p.packed, 8) || !fp4fuse::is_aligned(p.global_encode_scale, 4)) {
    return {status::misaligned_pointer};
  }
  return {};
}

}  // namespace detail

/// Runs one flow end to end on `stream` (flows 1 and 2: the GEMM, then their standalone kernel).
template <class Flow, class Activation>
fp4fuse::result run(const problem& p, Flow, const Activation& act, engine e, cudaStream_t stream = nullptr,
                    const sm90::launch_plan* force_plan = nullptr) {
  using fp4fuse::status;
  if (const fp4fuse::result v = detail::validate_problem(p); !v) return v;
  const std::int64_t T = p.T, I = p.I;
  const fp4fuse::quantized_matrix<format, layout> out{p.packed, I / 2, p.scales, layout{T, I / 16}};
  if constexpr (std::is_same_v<Flow, flow::interleaved_bf16>) {
    if (p.gate_up == nullptr) return {status::null_pointer};
    if (!fp4fuse::is_aligned(p.gate_up, 16)) return {status::misaligned_pointer};
    // validate_problem covered what the second kernel checks (but for its grid limit, which no
    // problem that fits in memory reaches): an error launches nothing.
    const fp4fuse::matrix_view<__nv_bfloat16> gu{p.gate_up, T, 2 * I, 2 * I};
    if (const fp4fuse::result r = gemm(p.x, p.w, p.T, 2 * p.I, p.H, store_bf16{gu}, e, stream, force_plan); !r) return r;
    return fp4fuse::swiglu_quantize<gate_up>(gu, out, fp4fuse::global_scale::per_tensor{p.global_encode_scale}, act, stream);
  } else if constexpr (std::is_same_v<Flow, flow::compact_bf16>) {
    if (p.h == nullptr) return {status::null_pointer};
    if (!fp4fuse::is_aligned(p.h, 16)) return {status::misaligned_pointer};
    const fp4fuse::matrix_view<__nv_bfloat16> h{p.h, T, I, I};
    if (const fp4fuse::result r = gemm(p.x, p.w, p.T, 2 * p.I, p.H, swiglu_bf16<Activation>{h, act}, e, stream, force_plan); !r) {
      return r;
    }
    return fp4fuse::quantize(h, out, fp4fuse::global_scale::per_tensor{p.global_encode_scale}, stream);
  } else {
    using intermediate = typename fused_traits<Flow>::intermediate;
    return gemm(p.x, p.w, p.T, 2 * p.I, p.H, swiglu_nvfp4<Activation, intermediate>{out, p.global_encode_scale, act}, e, stream, force_plan);
  }
}

}  // namespace l1_gemm
