#pragma once
/// \file grouped.cuh
/// The grouped (MoE) GEMM: the MoE layer's L1 over all experts in one launch, on the same sm_90a
/// GEMM engine as the dense GEMM (sm90/, with the grouped schedule of sm90/grouped_schedule.cuh):
//
//   for every expert e:  D_e = X[offsets[e] : offsets[e+1], H] * W_e[2I, H]^T (+ bias_e)
//
// X holds the routed tokens sorted by expert (`expert_offsets[E + 1]`, prefix sums of the routing
// counts, in device memory: the host never reads them); W is [E, 2I, H] with each expert's gate/up
// rows interleaved by 8. The fused flow writes act(gate) * up as NVFP4: packed E2M1 rows
// [rows, I / 2] at the token rows, and E4M3 scales in per-expert 128x4 swizzled blocks
// (`fp4fuse::scale_layout::grouped_swizzled_128x4`, either peer's convention for where an expert
// starts), every byte that is not a routed row's scale written 0x00. Flows 1 and 2 (BF16 out, then
// the standalone kernel over all rows, dense scale layout) are there for comparison.
//
// It needs an sm_90a target: the grouped kernels are wgmma kernels only.
#include <cuda/cmath>

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/gemm/dense.cuh"
#include "fp4fuse/gemm/epilogues.cuh"
#include "fp4fuse/gemm/sm90/grouped_launch.cuh"

namespace fp4fuse::gemm::moe {

using fp4fuse::status;
/// The grouped output's format: NVFP4 with TransformerEngine's recipe.
using format = fp4fuse::format::nvfp4<>;
/// One expert's scale layout (its band of the grouped layout).
using layout = fp4fuse::scale_layout::swizzled_128x4;

/// What the grouped GEMM reads. The experts and their offsets come with the output (its scale
/// layout holds them), or, for the BF16 flows, as arguments.
struct inputs {
  fp4fuse::matrix_view<const __nv_bfloat16> x;  ///< [rows, H] routed tokens sorted by expert, 16-byte aligned, ld == H
  const __nv_bfloat16* w = nullptr;             ///< [E, 2I, H], gate/up rows interleaved by 8 per expert
  const float* bias = nullptr;                  ///< optional [E, 2I] fp32, added to gate and up before the activation
};

/// The NVFP4 global encode scales as the epilogue reads them, from the library's descriptors: one
/// for all experts (`fp4fuse::global_scale::per_tensor`, `scales[0]`) or one per expert
/// (`fp4fuse::global_scale::per_group`, `scales[e]`), in device memory.
struct global_scales {
  const float* scales = nullptr;  ///< [1] or [E] in device memory
  bool per_expert = false;        ///< one scale per expert (`scales[e]`), else `scales[0]` for all
  /// No scales (null): a launch refuses it.
  global_scales() = default;
  /// One S for every expert.
  /// \code
  /// const fp4fuse::gemm::moe::global_scales s = fp4fuse::global_scale::per_tensor{d_S};  // scales[0] for every expert
  /// \endcode
  global_scales(fp4fuse::global_scale::per_tensor s) : scales(s.encode_scale) {}
  /// One S per expert (`encode_scales[e]`).
  /// \code
  /// const float* d_expert_S = nullptr;  // E floats in device memory
  /// const fp4fuse::gemm::moe::global_scales s = fp4fuse::global_scale::per_group{d_expert_S};  // s.per_expert
  /// \endcode
  global_scales(fp4fuse::global_scale::per_group s) : scales(s.encode_scales), per_expert(true) {}
};

/// The grouped output's scale layout, in either peer's convention for where an expert starts.
template <class ExpertStart>
using grouped_layout = fp4fuse::scale_layout::grouped_swizzled_128x4<ExpertStart>;
/// The grouped output: packed E2M1 rows and the grouped scales.
template <class ExpertStart>
using grouped_output = fp4fuse::quantized_matrix<format, grouped_layout<ExpertStart>>;

/// The grouped epilogues (the epilogue collective's grouped bindings): each binds one expert's part
/// of the output (its rows, its scale block, its global scale and bias) to the dense epilogue of
/// epilogues.cuh (`for_group`, called by the kernels per work unit through
/// `sm90::detail::epilogue_for`).
namespace epilogue {

/// Flow 1: BF16 gate/up [rows, 2I] (+ bias).
struct store_bf16 {
  fp4fuse::matrix_view<__nv_bfloat16> out;  ///< [rows, 2I]
  const float* bias;                        ///< [E, 2I] or null
  /// The dense epilogue of unit `u`'s group's rows, with `b` (its expert's bias, or none).
  /// \code
  /// __device__ void unit(const fp4fuse::gemm::moe::epilogue::store_bf16& g, const fp4fuse::gemm::sm90::work_unit& u, const float (&acc)[128]) {
  ///   const fp4fuse::gemm::store_bf16<fp4fuse::no_bias> epi = g.rows_of(u, fp4fuse::no_bias{});  // row 0: the group's first row
  ///   epi.warpgroup(acc, 0, 0);  // the group's rows 0..63, gate/up columns 0..255
  /// }
  /// \endcode
  template <class Bias>
  FP4FUSE_DEVICE fp4fuse::gemm::store_bf16<Bias> rows_of(const sm90::work_unit& u, const Bias& b) const {
    return {{out.data + static_cast<index_t>(u.group_row0) * out.ld, u.group_rows, out.cols, out.ld}, b};
  }
};

/// Flow 2: compact BF16 act(gate) * up [rows, I].
template <class Activation>
struct swiglu_bf16 {
  fp4fuse::matrix_view<__nv_bfloat16> out;  ///< [rows, I]
  Activation act;                           ///< the activation of gate
  const float* bias;                        ///< [E, 2I] or null
  /// The dense epilogue of unit `u`'s group's rows, with `b` (its expert's bias, or none).
  /// \code
  /// __device__ void unit(const fp4fuse::gemm::moe::epilogue::swiglu_bf16<fp4fuse::activation::swiglu>& g, const fp4fuse::gemm::sm90::work_unit& u,
  ///                      const float (&acc)[128]) {
  ///   g.rows_of(u, fp4fuse::no_bias{}).warpgroup(acc, 0, 0);  // the group's rows 0..63, outputs 0..127
  /// }
  /// \endcode
  template <class Bias>
  FP4FUSE_DEVICE fp4fuse::gemm::swiglu_bf16<Activation, Bias> rows_of(const sm90::work_unit& u, const Bias& b) const {
    return {{out.data + static_cast<index_t>(u.group_row0) * out.ld, u.group_rows, out.cols, out.ld}, act, b};
  }
};

/// Flow 3: SwiGLU -> NVFP4 into the grouped layout.
template <class ExpertStart, class Activation, class Intermediate = fp4fuse::intermediate::fp32>
struct swiglu_nvfp4 {
  grouped_output<ExpertStart> out;  ///< the grouped NVFP4 output
  global_scales scales;             ///< S, one or per expert
  Activation act;                   ///< the activation of gate
  const float* bias;                ///< [E, 2I] or null
  /// Each expert's scales start at a 128-row band (the schedule's `group_band_row0`).
  static constexpr int group_band_rows = static_cast<int>(grouped_layout<ExpertStart>::row_tile);
  /// The dense epilogue of unit `u`'s expert: its rows, its scale band, its S, and `b` (its bias, or none).
  /// \code
  /// using nvfp4_out = fp4fuse::gemm::moe::epilogue::swiglu_nvfp4<fp4fuse::scale_layout::expert_start::offset_bound, fp4fuse::activation::swiglu>;
  /// __device__ void unit(const nvfp4_out& g, const fp4fuse::gemm::sm90::work_unit& u, const float (&acc)[128]) {
  ///   g.rows_of(u, fp4fuse::no_bias{}).warpgroup(acc, 0, 0);  // expert u.group's rows 0..63, into its scale block
  /// }
  /// \endcode
  template <class Bias>
  FP4FUSE_DEVICE fp4fuse::gemm::swiglu_nvfp4<Activation, Intermediate, fp4fuse::recipe::te_exact, Bias> rows_of(
      const sm90::work_unit& u, const Bias& b) const {
    using layout_t = grouped_layout<ExpertStart>;
    const index_t start = layout_t::start_row(u.group, u.group_row0, u.group_band_row0);
    const fp4fuse::quantized_matrix<format, layout> expert_out{out.packed + static_cast<index_t>(u.group_row0) * out.ld_packed,
                                                               out.ld_packed, out.scales + start * out.layout.padded_cols(),
                                                               layout{u.group_rows, out.layout.scale_cols}};
    return {expert_out, scales.scales + (scales.per_expert ? u.group : 0), act, b};
  }
  /// Clears the whole scale tensor on `stream` (the gaps between the experts' bands and the tail
  /// stay 0x00; the kernel writes each expert's scales and padding): the launchers call it after
  /// every other preparation, just before the kernel (sm90::detail::before_launch).
  cudaError_t before_launch(cudaStream_t stream) const {
    return cudaMemsetAsync(out.scales, 0, static_cast<std::size_t>(out.layout.size_bytes()), stream);
  }
};

/// Any of the three with the expert's bias where `bias` is set: `for_group` is what the kernels
/// call. `Bias` is a compile-time choice (no bias, no cost): expert e's bias is the library's
/// `fp4fuse::column_bias{bias + e * 2I, 2I}`, added as the library's fragment adapters add it.
template <class Grouped, bool Bias>
struct grouped {
  Grouped g;             ///< one of the three bindings above
  index_t gate_up_cols;  ///< 2I
  /// The bands the schedule numbers groups in (sm90::detail::group_band_rows of the binding).
  static constexpr int group_band_rows = sm90::detail::group_band_rows<Grouped>;
  /// The bias type of the dense epilogue: `column_bias` where Bias, else `no_bias`.
  using bias_type = std::conditional_t<Bias, fp4fuse::column_bias, fp4fuse::no_bias>;
  /// What `for_group` returns: the dense epilogue `rows_of` binds, with the expert's bias where Bias.
  using type = decltype(std::declval<const Grouped&>().rows_of(std::declval<const sm90::work_unit&>(), bias_type{}));
  /// The epilogue of unit `u`'s group (what the kernels call).
  /// \code
  /// using epi_t = fp4fuse::gemm::moe::epilogue::grouped<fp4fuse::gemm::moe::epilogue::store_bf16, /*Bias=*/true>;
  /// __device__ void unit(const epi_t& epi, const fp4fuse::gemm::sm90::work_unit& u, const float (&acc)[128]) {
  ///   epi.for_group(u).warpgroup(acc, 0, 0);  // store_bf16<column_bias>: D + expert u.group's bias
  /// }
  /// \endcode
  FP4FUSE_DEVICE type for_group(const sm90::work_unit& u) const {
    if constexpr (Bias) {
      return g.rows_of(u, fp4fuse::column_bias{g.bias + static_cast<index_t>(u.group) * gate_up_cols, gate_up_cols});
    } else {
      return g.rows_of(u, fp4fuse::no_bias{});
    }
  }
  /// The binding's host work before the kernel, where it has any (`swiglu_nvfp4` clears its scale
  /// tensor; the BF16 bindings have none).
  cudaError_t before_launch(cudaStream_t stream) const { return sm90::detail::before_launch(g, stream); }
};

}  // namespace epilogue

namespace detail {

/// Where the experts and their offsets come from, for the messages: the output's layout (flow 3)
/// or the BF16 flows' arguments.
struct expert_names {
  const char* experts;
  const char* offsets;
};

/// Everything a grouped launch needs of its arguments, checked before any CUDA call or write: the
/// inputs, E and the offsets, the gate/up width N = 2I (`n_name` says which argument holds it),
/// the bounds of the kernels' 32-bit indexing, the forced plan (a kernel that exists, that takes
/// this flow's epilogue: the swap-AB kernel only `fused`, and that a launch with `Kernels`
/// compiles, else the sentence names `experimental_call`, the call that does), the workspace, and
/// (the CUDA calls, last, and only for a call with rows: cudaGetDevice, then wgmma_runs_here's
/// probe) that this GPU runs the sm_90a kernels.
template <class Kernels>
void check_launch(fp4fuse::argument_checker& c, const inputs& in, index_t N, const char* n_name, int experts, const std::int32_t* offsets,
                  const expert_names& names, const sm90::grouped_plan* force_plan, const sm90::workspace* workspace, bool fused,
                  const char* experimental_call) {
  static_assert(std::is_same_v<Kernels, sm90::planned_kernels> || std::is_same_v<Kernels, sm90::experimental_kernels>,
                "fp4fuse::gemm::moe: Kernels (the first template argument of run_bf16 and run_swiglu_bf16, the second of run_fused) is "
                "sm90::planned_kernels or sm90::experimental_kernels");
  c.matrix(in.x, "in.x", 8, 8, "16-byte rows for TMA");
  c.require(in.x.ld == in.x.cols, status::bad_leading_dimension, "in.x.ld = %lld must equal in.x.cols = %lld (one TMA tensor)",
            static_cast<long long>(in.x.ld), static_cast<long long>(in.x.cols));
  c.not_null(in.w, "in.w");
  c.aligned(in.w, 16, "in.w", "TMA");
  c.aligned(in.bias, 8, "in.bias", "float2 loads");
  c.not_null(offsets, names.offsets);
  c.aligned(offsets, 4, names.offsets, "int32");
  c.require(experts >= 1 && experts <= sm90::max_groups, status::bad_shape, "%s = %d must be in [1, %d]", names.experts, experts,
            sm90::max_groups);
  c.require(N >= 32 && N % 32 == 0, status::not_multiple_of_block, "%s gives 2I = %lld: a positive multiple of 32 is needed", n_name,
            static_cast<long long>(N));
  c.require(in.x.rows < (index_t(1) << 30) && in.x.cols < (index_t(1) << 20), status::bad_shape,
            "in.x is [%lld, %lld]: fewer than 2^30 rows and 2^20 columns are supported", static_cast<long long>(in.x.rows),
            static_cast<long long>(in.x.cols));
  c.require(N < (index_t(1) << 31), status::bad_shape, "%s gives 2I = %lld: below 2^31 is supported", n_name, static_cast<long long>(N));
  if (c) {  // the bounds above keep these products in range
    c.require(static_cast<index_t>(experts) * N < (index_t(1) << 31), status::bad_shape, "%s * 2I = %lld exceeds 32-bit W row indexing",
              names.experts, static_cast<long long>(experts) * N);
    c.require(sm90::detail::grouped_units_fit(in.x.rows, experts, N), status::bad_shape,
              "in.x.rows = %lld with %s = %d and 2I = %lld gives more work units than 32-bit indexing allows",
              static_cast<long long>(in.x.rows), names.experts, experts, static_cast<long long>(N));
  }
  if (c) {  // the plan launch_grouped will run, refused as it would refuse it (sm90::detail::check_plan)
    const sm90::grouped_plan p = force_plan != nullptr ? *force_plan
                                                       : sm90::plan_grouped(static_cast<int>(in.x.rows), experts, static_cast<int>(N), static_cast<int>(in.x.cols));
    sm90::detail::check_plan<Kernels>(c, p, force_plan != nullptr ? "the forced plan" : "plan_grouped's plan", fused, workspace, "call",
                                      experimental_call);
  }
  if (c && in.x.rows > 0) {
    // No GPU (or no driver) is no_device, as for every library launcher, not a wrong architecture.
    int device = 0;
    if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) {
      const fp4fuse::result r = fp4fuse::cuda_failure(err, "");  // ": no usable CUDA device (...)"
      c.require(r.code != status::no_device, status::no_device, "%s", r.message() + 2);
    }
  }
  if (c && in.x.rows > 0) {
    c.require(fp4fuse::gemm::detail::wgmma_runs_here(), status::unsupported_architecture,
              "needs an sm_90 GPU and an sm_90a image in this build (the grouped kernels are sm_90a)");
  }
}

/// The grouped GEMM with a grouped epilogue (`epilogue::grouped<...>`) whose arguments
/// `check_launch` has accepted.
template <class Kernels = sm90::planned_kernels, class Epilogue>
fp4fuse::result launch(const inputs& in, index_t N, int experts, const std::int32_t* offsets, const Epilogue& epi, cudaStream_t stream,
                       const sm90::grouped_plan* force_plan, const sm90::workspace* workspace = nullptr) {
  return sm90::launch_grouped<Kernels>(in.x.data, in.w, static_cast<int>(in.x.rows), static_cast<int>(N), static_cast<int>(in.x.cols), experts,
                              offsets, epi, stream, force_plan, workspace);
}

}  // namespace detail

/// Flow 3, the fused grouped L1: act(gate + bias_g) * (up + bias_u) of every routed row as NVFP4
/// into `out` (whose layout holds E, the offsets and the capacity), with S from
/// `fp4fuse::global_scale::per_tensor{d_S}` (one for all experts) or `per_group{d_expert_S}` (one
/// per expert). The whole scale tensor is
/// written: after every argument is checked it is cleared (one memset on `stream`: the gaps and
/// the tail of the grouped layout), then the kernel writes each expert's scales and in-band
/// padding; packed rows at or beyond expert_offsets[E] are not written. A refused call writes
/// nothing; the memset is queued after every other preparation of the launch (the unit counter,
/// the kernel's attributes, the tensor maps), so of the CUDA failures only the kernel's launch
/// itself can come after it. The first call probes the GPU once
/// (fp4fuse::gemm::detail::wgmma_runs_here: a private stream, outside any capture), so the call
/// may be captured into a CUDA graph.
/// Preconditions (each refused with a sentence, nothing written): `in.x` [rows, H] BF16 with
/// ld == H, H a multiple of 8, 16-byte aligned, rows < 2^30 and H < 2^20; `in.w` [E, 2I, H]
/// 16-byte aligned, E * 2I < 2^31; `in.bias` null or 8-byte aligned; `out.layout.rows` == rows,
/// E in [1, 1024], 2I = 32 * out.layout.scale_cols; `out.packed` 8-byte aligned with ld_packed
/// >= I / 2 and a multiple of 8, `out.scales` non-null; S non-null and 4-byte aligned; no more
/// work units than the schedule's 32-bit count; the offsets a prefix sum within [0, rows]
/// (checked on the device: a routing that is not one traps). 0 rows: ok, no kernel; the
/// scale tensor is still cleared (the memset alone).
/// `Kernels`: the kernels the call compiles, `sm90::planned_kernels` (the 4 tile shapes
/// `plan_grouped` chooses, 8 kernels with and without a bias) or `sm90::experimental_kernels`
/// (every grouped kernel and the swap-AB kernel: 28 kernels) for forced plans.
/// `force_plan`: a plan to run instead of `plan_grouped`'s (sm90::valid); one that no plan chooses
/// only with `Kernels` = `fp4fuse::gemm::sm90::experimental_kernels`
/// (`run_fused<fp4fuse::intermediate::fp32, fp4fuse::gemm::sm90::experimental_kernels>(...)`).
/// `workspace`: the caller's counter for a plan that takes its units in order from one (the
/// ping-pong's and the cooperative 192 x 128's, `sm90::grouped_plan::takes_units`; sm90::workspace::size_for(plan);
/// zeroed once, every launch leaves it zero); null: the one kept for the device and stream, or
/// under stream capture one of the graph's own (sm90/workspace.cuh: which launches may overlap).
/// \code // not compiled: it instantiates the planned grouped kernels (about a minute); tests/gemm/grouped.cu makes this call
/// using layout_t = fp4fuse::gemm::moe::grouped_layout<fp4fuse::scale_layout::expert_start::padded_prefix_sum>;
/// const layout_t layout{rows, I / 16, E, d_offsets};  // d_offsets: [E + 1] prefix sums, device memory
/// const fp4fuse::gemm::moe::grouped_output<fp4fuse::scale_layout::expert_start::padded_prefix_sum> out{d_packed, I / 2, d_scales, layout};
/// const fp4fuse::gemm::moe::inputs in{{d_x, rows, H, H}, d_w, /*bias=*/nullptr};
/// const fp4fuse::result r = fp4fuse::gemm::moe::run_fused(in, out, fp4fuse::global_scale::per_tensor{d_S}, fp4fuse::activation::swiglu{}, stream);
/// if (!r) std::fprintf(stderr, "%s\n", r.message());
/// \endcode
template <class Intermediate = fp4fuse::intermediate::fp32, class Kernels = sm90::planned_kernels, class ExpertStart, class Activation>
fp4fuse::result run_fused(const inputs& in, const grouped_output<ExpertStart>& out, const global_scales& S, const Activation& act,
                          cudaStream_t stream = nullptr, const sm90::grouped_plan* force_plan = nullptr,
                          const sm90::workspace* workspace = nullptr) {
  fp4fuse::argument_checker c("fp4fuse::gemm::moe::run_fused");
  c.quantized(out, "out");
  c.require(out.layout.rows == in.x.rows, status::bad_shape, "out.layout.rows = %lld must equal in.x.rows = %lld",
            static_cast<long long>(out.layout.rows), static_cast<long long>(in.x.rows));
  c.not_null(S.scales, "S (NVFP4 global encode scales, device memory)");
  c.aligned(S.scales, 4, "S", "float");
  const index_t N = 2 * out.cols();
  detail::check_launch<Kernels>(c, in, N, "out.layout.scale_cols", out.layout.experts, out.layout.expert_offsets,
                                {"out.layout.experts", "out.layout.expert_offsets"}, force_plan, workspace, /*fused=*/true,
                                "run_fused<Intermediate, fp4fuse::gemm::sm90::experimental_kernels>");
  if (!c) return c.outcome();
  using nvfp4 = epilogue::swiglu_nvfp4<ExpertStart, Activation, Intermediate>;
  const nvfp4 e{out, S, act, in.bias};
  const int E = out.layout.experts;
  return in.bias != nullptr
             ? detail::launch<Kernels>(in, N, E, out.layout.expert_offsets, epilogue::grouped<nvfp4, true>{e, N}, stream, force_plan, workspace)
             : detail::launch<Kernels>(in, N, E, out.layout.expert_offsets, epilogue::grouped<nvfp4, false>{e, N}, stream, force_plan, workspace);
}

/// Flow 1's GEMM: BF16 gate/up (+ bias) [rows, 2I] of every routed row, each element the fp32 sum
/// (in the order of H) rounded once to BF16 (round to nearest even). Rows at or beyond
/// offsets[experts] are not written. Preconditions as `run_fused`'s, with E = `experts` and the
/// offsets given here; `gate_up` [rows, 2I] with 2I a multiple of 32, 16-byte aligned, ld a
/// multiple of 8; `Kernels`, `force_plan` (no swap-AB plan: it takes the fused epilogue only) and
/// `workspace` as for `run_fused`. 0 rows: ok, nothing launched.
/// \code // not compiled: it instantiates the planned grouped kernels (about a minute); tests/gemm/grouped.cu makes this call
/// const fp4fuse::gemm::moe::inputs in{{d_x, rows, H, H}, d_w, /*bias=*/nullptr};
/// const fp4fuse::result r = fp4fuse::gemm::moe::run_bf16(in, {d_gate_up, rows, 2 * I, 2 * I}, E, d_offsets, stream);
/// \endcode
template <class Kernels = sm90::planned_kernels>
fp4fuse::result run_bf16(const inputs& in, fp4fuse::matrix_view<__nv_bfloat16> gate_up, int experts, const std::int32_t* offsets,
                         cudaStream_t stream = nullptr, const sm90::grouped_plan* force_plan = nullptr,
                         const sm90::workspace* workspace = nullptr) {
  fp4fuse::argument_checker c("fp4fuse::gemm::moe::run_bf16");
  c.matrix(gate_up, "gate_up", 32, 32, "NVFP4 blocks of the next step");
  c.require(gate_up.rows == in.x.rows, status::bad_shape, "gate_up.rows = %lld must equal in.x.rows = %lld",
            static_cast<long long>(gate_up.rows), static_cast<long long>(in.x.rows));
  detail::check_launch<Kernels>(c, in, gate_up.cols, "gate_up.cols", experts, offsets, {"experts", "expert_offsets"}, force_plan, workspace,
                                /*fused=*/false, "run_bf16<fp4fuse::gemm::sm90::experimental_kernels>");
  if (!c) return c.outcome();
  const epilogue::store_bf16 e{gate_up, in.bias};
  const index_t N = gate_up.cols;
  return in.bias != nullptr
             ? detail::launch<Kernels>(in, N, experts, offsets, epilogue::grouped<epilogue::store_bf16, true>{e, N}, stream, force_plan, workspace)
             : detail::launch<Kernels>(in, N, experts, offsets, epilogue::grouped<epilogue::store_bf16, false>{e, N}, stream, force_plan, workspace);
}

/// Flow 2's GEMM: compact BF16 act(gate) * up [rows, I] of every routed row: the activation of the
/// fp32 sums (bias added first where `in.bias` is set, as `run_fused` does), rounded once to BF16.
/// Preconditions as `run_bf16`'s, with `h` [rows, I], I a multiple of 16. 0 rows: ok, nothing
/// launched.
/// \code // not compiled: it instantiates the planned grouped kernels (about a minute); tests/gemm/grouped.cu makes this call
/// const fp4fuse::gemm::moe::inputs in{{d_x, rows, H, H}, d_w, /*bias=*/nullptr};
/// const fp4fuse::result r = fp4fuse::gemm::moe::run_swiglu_bf16(in, {d_h, rows, I, I}, fp4fuse::activation::swiglu{}, E, d_offsets, stream);
/// \endcode
template <class Kernels = sm90::planned_kernels, class Activation>
fp4fuse::result run_swiglu_bf16(const inputs& in, fp4fuse::matrix_view<__nv_bfloat16> h, const Activation& act, int experts,
                                const std::int32_t* offsets, cudaStream_t stream = nullptr, const sm90::grouped_plan* force_plan = nullptr,
                                const sm90::workspace* workspace = nullptr) {
  fp4fuse::argument_checker c("fp4fuse::gemm::moe::run_swiglu_bf16");
  c.matrix(h, "h", 16, 16, "NVFP4 blocks of the next step");
  c.require(h.rows == in.x.rows, status::bad_shape, "h.rows = %lld must equal in.x.rows = %lld", static_cast<long long>(h.rows),
            static_cast<long long>(in.x.rows));
  const index_t N = 2 * h.cols;
  detail::check_launch<Kernels>(c, in, N, "h.cols", experts, offsets, {"experts", "expert_offsets"}, force_plan, workspace, /*fused=*/false,
                                "run_swiglu_bf16<fp4fuse::gemm::sm90::experimental_kernels>");
  if (!c) return c.outcome();
  const epilogue::swiglu_bf16<Activation> e{h, act, in.bias};
  using g = epilogue::swiglu_bf16<Activation>;
  return in.bias != nullptr ? detail::launch<Kernels>(in, N, experts, offsets, epilogue::grouped<g, true>{e, N}, stream, force_plan, workspace)
                            : detail::launch<Kernels>(in, N, experts, offsets, epilogue::grouped<g, false>{e, N}, stream, force_plan, workspace);
}

}  // namespace fp4fuse::gemm::moe
