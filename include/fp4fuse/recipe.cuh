#pragma once
/// \file recipe.cuh
/// Block-scale recipes: *what* order of operations computes an NVFP4 or MXFP4 block scale and its
/// element multiplier. Each recipe is a tag type given to a format tag (`format::nvfp4<Recipe>`,
/// `format::mxfp4<Recipe>`); `block_codec<Format>` implements it. The recipes side by side, with
/// their behaviour on zero, underflowing, NaN and Inf blocks: docs/NUMERICS.md.
/// \code
/// using te = fp4fuse::format::nvfp4<fp4fuse::recipe::te_exact>;  // the default
/// using mx = fp4fuse::format::mxfp4<fp4fuse::recipe::mx_round_up>;
/// \endcode
#include "fp4fuse/config.cuh"

namespace fp4fuse::recipe {

/// TransformerEngine's NVFP4 recipe, bit for bit: scale byte e4m3(amax * (S * (1/6))), multiplier
/// min(1 / (sf * (1/S)), FLT_MAX) with IEEE division (sf the decoded scale). The default. The
/// block amax ignores NaN elements.
struct te_exact {};

/// vLLM's NVFP4 recipe (also TensorRT-LLM's and flashinfer's default): scale byte
/// e4m3(S * (amax * rcp(6))), multiplier sf == 0 ? 0 : rcp(sf * rcp(S)). On the device `rcp` is
/// `rcp.approx.ftz.f32` as in vLLM; on the host it is IEEE 1/x. rcp(6) and the block scale are
/// identical on both; the multiplier can differ by up to 3 ulp (rcp.approx applied twice: rcp(S)
/// and the final rcp; 3 seen on the H200, docs/NUMERICS.md), which changes an element's code only
/// where x * multiplier lies within those ulps of an E2M1 rounding boundary.
struct vllm {};

/// OCP Microscaling v1.0 MXFP4: scale 2^(floor(log2(amax)) - 2) (E2M1's emax is 2), values
/// beyond 6 after scaling saturate; the amax propagates NaN and Inf (scale 0xFF).
struct mx_ocp {};

/// MXFP4 with the scale rounded up to cover amax / 6: ue8m0_rp(amax / 6), IEEE division (no
/// element saturates unless the division rounds onto a power of two); NaN and Inf as mx_ocp.
struct mx_round_up {};

}  // namespace fp4fuse::recipe
