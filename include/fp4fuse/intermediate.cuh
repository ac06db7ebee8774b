#pragma once
/// \file intermediate.cuh
/// Whether a gated activation's output act(gate) * up is quantized straight from fp32 or rounded
/// to bfloat16 first. A tag of every entry point that quantizes an activation (`swiglu_quantize`,
/// the fused epilogues).
/// \code
/// using bit_parity_with_bf16_pipelines = fp4fuse::intermediate::bf16;
/// \endcode
#include "fp4fuse/config.cuh"

namespace fp4fuse::intermediate {

/// Quantize act(gate) * up straight from fp32 (the default, more accurate).
struct fp32 {};

/// Round act(gate) * up to bfloat16 (round to nearest even) before quantizing: bit for bit what a
/// BF16 SwiGLU kernel followed by `quantize` produces, as the peers' fused kernels do.
struct bf16 {};

}  // namespace fp4fuse::intermediate
