#pragma once
/// \file activation.cuh
/// Gated activations as tag types: `apply(gate, up)` returns act(gate) * up in fp32.
///
/// The exact ones (`swiglu`, `swiglu_clamped`, `geglu_tanh`) use fp4fuse's portable exp
/// (detail/exp.cuh, within 2 ulp of exp), IEEE division and explicitly rounded products, so the host
/// and every GPU produce the same bits; they do not match CUDA's or glibc's expf to the last bit. A
/// --use_fast_math build is refused (docs/NUMERICS.md, "Build flags").
///
/// The opt-in fast ones (`swiglu_fast`, `swiglu_clamped_fast`) compute what kernels compiled with
/// fast math do: the hardware `ex2.approx.ftz` and `rcp.approx.ftz` on the device (relative error
/// bound in docs/NUMERICS.md, measured in tests/activation.cu), std::exp2 and IEEE
/// division on the host. Host and device are NOT bit-identical for them, and their NVFP4 codes
/// differ from the exact activations' in a small fraction of elements (measured in
/// tests/kernels/swiglu_quantize.cu, reported in docs/NUMERICS.md).
/// \code
/// float h = fp4fuse::activation::swiglu{}.apply(gate, up);          // silu(gate) * up
/// float o = fp4fuse::activation::swiglu_clamped{1.702f, 7.0f}.apply(gate, up);  // GPT-OSS
/// \endcode
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/exp.cuh"

namespace fp4fuse::activation {

/// SwiGLU: silu(gate) * up with silu(g) = g / (1 + e^-g) (IEEE division).
struct swiglu {
  /// (gate / (1 + exp(-gate))) * up; the add, the division and the product each rounded once in
  /// fp32, exp from the portable implementation (within 2 ulp of exp). A zero gate gives gate * up
  /// (0 / 2 is that zero) without dividing: on the device a zero dividend takes the IEEE
  /// division's slow path, which doubled the activation's time (rows of zeros: padding tokens, the
  /// rows beyond a GEMM's M in its last tile; bench/results/engine9.md).
  /// \code
  /// float h = fp4fuse::activation::swiglu{}.apply(1.0f, 2.0f);  // 1.4621172f: silu(1) * 2
  /// \endcode
  FP4FUSE_HOST_DEVICE float apply(float gate, float up) const {
    const bool zero = gate == 0.0f;
    const float silu = detail::div_rn(zero ? 1.0f : gate, detail::add_rn(1.0f, detail::exp_portable(-gate)));
    return detail::mul_rn(zero ? gate : silu, up);
  }
};

/// GPT-OSS clamped SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
/// out = (g * sigmoid(alpha * g)) * (u + 1). NaN inputs propagate (as torch.clamp does).
/// Defaults are GPT-OSS's alpha = 1.702, limit = 7.
struct swiglu_clamped {
  /// Sigmoid slope: the activation uses sigmoid(alpha * g).
  float alpha = 1.702f;
  /// Clamp bound: gate is clamped above at `limit`, up to [-limit, limit].
  float limit = 7.0f;
  /// (g * sigmoid(alpha * g)) * (u + 1), g = min(gate, limit), u = clamp(up, -limit, limit); fp32,
  /// each product rounded once; NaN inputs propagate.
  /// \code
  /// float o = fp4fuse::activation::swiglu_clamped{}.apply(10.0f, 10.0f);  // 55.9996262f: gate 7, up 7: (7 sigmoid(11.914)) * 8
  /// \endcode
  FP4FUSE_HOST_DEVICE float apply(float gate, float up) const {
    const float g = gate > limit ? limit : gate;
    const float u = up > limit ? limit : (up < -limit ? -limit : up);
    const float glu = detail::mul_rn(g, detail::sigmoid_portable(detail::mul_rn(alpha, g)));
    return detail::mul_rn(glu, detail::add_rn(u, 1.0f));
  }
};

/// SwiGLU with the hardware exp and reciprocal (opt-in): silu(gate) * up with
/// silu(g) = g * rcp.approx(1 + ex2.approx(-g log2 e)), as fast-math SiLU kernels compute it.
/// Device: within 2^-20 + |g| 2^-23 relative of the exact silu(g) * up for |g| <= 80
/// (tests/activation.cu measures it on the GPU against double precision). `ftz`: the sigmoid factor
/// flushes to 0 where it falls below 2^-126 (gate below -87.3), so the result there is +-0 where the
/// exact one is below 1e-35 in magnitude; subnormal gates, ups and products are kept (the products
/// are IEEE). Host: std::exp2 and IEEE division (not bit-identical to the device).
/// \code
/// float h = fp4fuse::activation::swiglu_fast{}.apply(gate, up);
/// \endcode
struct swiglu_fast {
  /// (gate * rcp(1 + ex2(-gate log2 e))) * up; each product rounded once, no fma contraction.
  /// \code
  /// float h = fp4fuse::activation::swiglu_fast{}.apply(1.0f, 2.0f);  // about 1.4621172f, as swiglu
  /// \endcode
  FP4FUSE_HOST_DEVICE float apply(float gate, float up) const { return detail::mul_rn(detail::x_sigmoid_fast(gate, detail::log2e_f), up); }
};

/// GPT-OSS clamped SwiGLU with the hardware exp and reciprocal (opt-in): the clamps of
/// `swiglu_clamped`, then (g * rcp(1 + ex2(-alpha g log2 e))) * (u + 1). NaN inputs propagate.
/// Device error bound (with z = alpha g), flushing (below gate -87.3 / alpha) and host path as
/// `swiglu_fast`.
/// \code
/// float o = fp4fuse::activation::swiglu_clamped_fast{1.702f, 7.0f}.apply(gate, up);
/// \endcode
struct swiglu_clamped_fast {
  /// Sigmoid slope: the activation uses sigmoid(alpha * g).
  float alpha = 1.702f;
  /// Clamp bound: gate is clamped above at `limit`, up to [-limit, limit].
  float limit = 7.0f;
  /// (g * sigmoid_fast(alpha * g)) * (u + 1), g = min(gate, limit), u = clamp(up, -limit, limit).
  /// \code
  /// float o = fp4fuse::activation::swiglu_clamped_fast{}.apply(10.0f, 10.0f);  // about 55.9996f, as swiglu_clamped
  /// \endcode
  FP4FUSE_HOST_DEVICE float apply(float gate, float up) const {
    // NaN-keeping min/max (one instruction each on the device); a NaN's payload may differ from
    // the exact form's, its value does not.
    const float g = detail::min_keep_nan(gate, limit);
    const float u = detail::clamp_keep_nan(up, -limit, limit);
    return detail::mul_rn(detail::x_sigmoid_fast(g, detail::mul_rn(alpha, detail::log2e_f)), detail::add_rn(u, 1.0f));
  }
};

/// GeGLU with the tanh GELU: gelu(gate) * up, gelu(g) = g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3))
/// (the identity 0.5 (1 + tanh z) = sigmoid(2z) avoids tanh's cancellation near 0).
struct geglu_tanh {
  /// (gate * sigmoid(1.5957691 * (gate + 0.044715 gate^3))) * up in fp32 (tanh GELU of gate times up).
  /// \code
  /// float h = fp4fuse::activation::geglu_tanh{}.apply(1.0f, 2.0f);  // 1.68238401f: gelu_tanh(1) * 2
  /// \endcode
  FP4FUSE_HOST_DEVICE float apply(float gate, float up) const {
    const float cubic = detail::fma_rn(detail::mul_rn(0.044715f, detail::mul_rn(gate, gate)), gate, gate);
    const float z = detail::mul_rn(1.5957691216057308f, cubic);
    return detail::mul_rn(detail::mul_rn(gate, detail::sigmoid_portable(z)), up);
  }
};

}  // namespace fp4fuse::activation
