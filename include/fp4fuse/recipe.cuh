#pragma once
/// \file recipe.cuh
/// Block-scale recipes: *what* order of operations computes an NVFP4 or MXFP4 block scale and its
/// element multiplier. Each recipe is a tag type; `nvfp4_quantizer<Recipe>` and
/// `mxfp4_quantizer<Recipe>` implement them.
///
/// | recipe             | block scale                          | element multiplier                         |
/// |--------------------|--------------------------------------|--------------------------------------------|
/// | `recipe::te_exact` | e4m3(amax * (S * (1/6)))             | min(1 / (sf * (1/S)), FLT_MAX), IEEE div.  |
/// | `recipe::vllm`     | e4m3(S * (amax * rcp(6)))            | sf == 0 ? 0 : rcp(sf * rcp(S))             |
/// | `recipe::mx_ocp`   | 2^(floor(log2 amax) - 2)             | 1 / scale, exact (power of two)            |
/// | `recipe::mx_round_up` | 2^ceil(log2(amax / 6)) (ue8m0 .rp) | 1 / scale, exact                           |
///
/// amax: the NVFP4 recipes ignore NaN elements when taking the block maximum (as TE and vLLM do);
/// the MX recipes propagate NaN and Inf into a NaN scale (0xFF).
#include "fp4fuse/config.cuh"

namespace fp4fuse::recipe {

/// TransformerEngine's NVFP4 recipe, bit for bit, IEEE division for the multiplier. The default.
struct te_exact {};

/// vLLM's NVFP4 recipe (also TensorRT-LLM's and flashinfer's default). On the device `rcp` is
/// `rcp.approx.ftz.f32` as in vLLM; on the host it is IEEE 1/x. rcp(6) and the block scale are
/// identical on both; the multiplier can differ in its last bit (through rcp(S) and the final
/// rcp), which changes an element's code only where x * multiplier lies within an ulp of an E2M1
/// rounding boundary.
struct vllm {};

/// OCP Microscaling v1.0 MXFP4: shared exponent floor(log2(amax)) - 2 (E2M1's emax), values
/// beyond 6 after scaling saturate.
struct mx_ocp {};

/// MXFP4 with the scale rounded up to cover amax / 6 (no element saturates unless the division
/// rounds onto a power of two).
struct mx_round_up {};

}  // namespace fp4fuse::recipe
