#pragma once
/// \file nvfp4.cuh
/// NVFP4 block quantization: 16 consecutive values -> 8 packed E2M1 bytes + one E4M3 scale, given
/// the tensor's global encode scale S (see global_scale.cuh), and the inverse.
///
/// A `nvfp4_quantizer<Recipe>` is built once per thread from S (it precomputes the per-tensor
/// constants) and then quantizes blocks. The pieces are public so that an epilogue can reduce
/// the block amax across lanes itself:
/// \code
/// fp4fuse::nvfp4_quantizer<> q(S);                    // recipe::te_exact
/// float amax = fp4fuse::nvfp4_block_amax(x);           // or a warp reduction of partial maxima
/// fp4fuse::nvfp4_block_scale s = q.block_scale(amax);  // E4M3 code + element multiplier
/// uint64_t packed = q.encode(x, s);                    // 16 nibbles
/// \endcode
///
/// Behaviour table (both recipes unless stated; S finite and positive):
/// | block                     | scale byte               | elements                                   |
/// |---------------------------|--------------------------|--------------------------------------------|
/// | all +-0                   | 0x00                     | te_exact: +-0 (0x0/0x8); vllm: +-0          |
/// | amax*S/6 <= 2^-10 (underflow) | 0x00                 | te_exact: x*FLT_MAX, so +-6 unless |x| < 2^-126ish; vllm: +-0 |
/// | contains NaN              | from the non-NaN amax    | NaN elements -> 0x7 (+6), others as usual   |
/// | contains +-Inf            | 0x7E (448, satfinite)    | +-Inf -> +-6, finite elements scaled by 1/(448/S) |
/// | -0 or tiny negative elements | -                     | sign kept: 0x8                              |
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/e4m3.cuh"
#include "fp4fuse/global_scale.cuh"
#include "fp4fuse/recipe.cuh"

#include <cuda/std/limits>

namespace fp4fuse {

/// Elements per NVFP4 block (along K).
inline constexpr int nvfp4_block_size = 16;

/// One block's scale: the E4M3 byte stored in the scale tensor, and the multiplier applied to
/// each element before E2M1 encoding.
struct nvfp4_block_scale {
  /// E4M3 byte stored in the scale tensor.
  cuda::std::uint8_t code;
  /// Factor applied to each element before E2M1 encoding (recipe-specific, see recipe.cuh).
  float multiplier;
};

/// One quantized block: element i in bits 4i+3..4i of `packed` (memory order when stored
/// little-endian), and the E4M3 scale byte.
struct nvfp4_block {
  /// Element i in bits 4i+3..4i (packed order when stored little-endian).
  cuda::std::uint64_t packed;
  /// The E4M3 scale byte.
  cuda::std::uint8_t scale;
};

/// Largest magnitude of a block, ignoring NaN elements (as TE and vLLM do). +-0 for an all-zero or
/// all-NaN block.
/// \code
/// float amax = fp4fuse::nvfp4_block_amax(x);  // x: float[16]
/// \endcode
template <int N = nvfp4_block_size>
FP4FUSE_HOST_DEVICE float nvfp4_block_amax(const float (&x)[N]) {
  float amax = 0.0f;
FP4FUSE_UNROLL
  for (int i = 0; i < N; ++i) {
    amax = detail::max_num(amax, detail::abs_float(x[i]));
  }
  return amax;
}

namespace detail {
/// vLLM's reciprocal: `rcp.approx.ftz.f32` on the device. The host uses IEEE 1/x with the same
/// flush-to-zero of subnormal inputs and results, so the two differ by at most the instruction's
/// approximation error (measured: tests/nvfp4.cu).
FP4FUSE_HOST_DEVICE float reciprocal_approx_ftz(float x) {
#if FP4FUSE_DEVICE_PASS
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  const auto flush = [](float v) {
    return (float_bits(v) & 0x7F800000u) == 0 ? bits_float(float_bits(v) & 0x80000000u) : v;
  };
  return flush(1.0f / flush(x));
#endif
}


/// E2M1 codes of x[i] * multiplier, element i in bits 4i+3..4i: the encoding step every NVFP4
/// recipe shares.
FP4FUSE_HOST_DEVICE cuda::std::uint64_t nvfp4_encode_scaled(const float (&x)[nvfp4_block_size], float multiplier) {
  float y[nvfp4_block_size];
  FP4FUSE_UNROLL
  for (int i = 0; i < nvfp4_block_size; ++i) {
    y[i] = x[i] * multiplier;
  }
  return e2m1x16_encode(y);
}
}  // namespace detail

template <class Recipe = recipe::te_exact>
class nvfp4_quantizer;

namespace detail {
/// What every NVFP4 recipe shares: the IEEE decode scale 1/S, encoding with a block scale, and
/// amax + scale + encoding of a whole block. `Derived` provides `block_scale(amax)`.
template <class Derived>
class nvfp4_quantizer_base {
 public:
  /// Encodes 16 elements with a scale from `block_scale`: nibble i = e2m1(x[i] * s.multiplier).
  FP4FUSE_HOST_DEVICE cuda::std::uint64_t encode(const float (&x)[nvfp4_block_size], nvfp4_block_scale s) const {
    return nvfp4_encode_scaled(x, s.multiplier);
  }
  /// amax (ignoring NaN), scale and encoding of one block.
  FP4FUSE_HOST_DEVICE nvfp4_block quantize(const float (&x)[nvfp4_block_size]) const {
    const nvfp4_block_scale s = static_cast<const Derived*>(this)->block_scale(nvfp4_block_amax(x));
    return {encode(x, s), s.code};
  }
  /// 1/S (IEEE), the per-tensor decode factor.
  FP4FUSE_HOST_DEVICE float decode_scale() const { return decode_scale_; }

 protected:
  FP4FUSE_HOST_DEVICE explicit nvfp4_quantizer_base(float global_encode_scale) : decode_scale_(1.0f / global_encode_scale) {}
  float decode_scale_;
};
}  // namespace detail

/// TransformerEngine's recipe (the default). See recipe.cuh for the formulas. `encode`, `quantize`
/// and `decode_scale` are shared by every recipe (see `nvfp4_quantizer<recipe::vllm>`'s example).
template <>
class nvfp4_quantizer<recipe::te_exact> : public detail::nvfp4_quantizer_base<nvfp4_quantizer<recipe::te_exact>> {
 public:
  /// \param global_encode_scale S, e.g. from `nvfp4_global_encode_scale(tensor_amax)`.
  FP4FUSE_HOST_DEVICE explicit nvfp4_quantizer(float global_encode_scale)
      : nvfp4_quantizer_base(global_encode_scale), scale_over_6_(global_encode_scale * (1.0f / 6.0f)) {}

  /// E4M3 code = e4m3(amax * (S * (1/6))); multiplier = min(1 / (decode(code) * (1/S)), FLT_MAX).
  FP4FUSE_HOST_DEVICE nvfp4_block_scale block_scale(float block_amax) const {
    const cuda::std::uint8_t code = e4m3_encode(block_amax * scale_over_6_);
    const float multiplier =
        detail::min_num(1.0f / (e4m3_decode(code) * decode_scale_), cuda::std::numeric_limits<float>::max());
    return {code, multiplier};
  }

 private:
  float scale_over_6_;
};

/// vLLM's recipe. See recipe.cuh for the formulas and where host and device can differ.
/// \code
/// fp4fuse::nvfp4_block b = fp4fuse::nvfp4_quantizer<fp4fuse::recipe::vllm>(S).quantize(x);  // x: float[16]
/// \endcode
template <>
class nvfp4_quantizer<recipe::vllm> : public detail::nvfp4_quantizer_base<nvfp4_quantizer<recipe::vllm>> {
 public:
  /// Precomputes rcp(S) (`rcp.approx.ftz.f32` on the device, IEEE 1/x with flush-to-zero on the
  /// host) and 1/S (IEEE).
  /// \param global_encode_scale S, e.g. from `nvfp4_global_encode_scale(tensor_amax)`.
  FP4FUSE_HOST_DEVICE explicit nvfp4_quantizer(float global_encode_scale)
      : nvfp4_quantizer_base(global_encode_scale),
        encode_scale_(global_encode_scale),
        decode_scale_rcp_(detail::reciprocal_approx_ftz(global_encode_scale)) {}

  /// E4M3 code = e4m3(S * (amax * rcp(6))); multiplier = code == 0 ? 0 : rcp(decode(code) * rcp(S)).
  FP4FUSE_HOST_DEVICE nvfp4_block_scale block_scale(float block_amax) const {
    const cuda::std::uint8_t code = e4m3_encode(encode_scale_ * (block_amax * detail::reciprocal_approx_ftz(6.0f)));
    const float sf = e4m3_decode(code);
    const float multiplier = sf != 0.0f ? detail::reciprocal_approx_ftz(sf * decode_scale_rcp_) : 0.0f;
    return {code, multiplier};
  }

 private:
  float encode_scale_;
  float decode_scale_rcp_;
};

/// Decodes one NVFP4 block: out[i] = (e2m1(nibble i) * e4m3(scale)) * decode_scale. The first
/// product is exact; the second rounds once. decode_scale is 1/S.
/// \code
/// float x[16];
/// fp4fuse::nvfp4_dequantize_block(packed, scale, fp4fuse::nvfp4_global_decode_scale(S), x);
/// \endcode
FP4FUSE_HOST_DEVICE void nvfp4_dequantize_block(cuda::std::uint64_t packed, cuda::std::uint8_t scale,
                                                float decode_scale, float (&out)[nvfp4_block_size]) {
  const float sf = e4m3_decode(scale);
FP4FUSE_UNROLL
  for (int i = 0; i < nvfp4_block_size; ++i) {
    out[i] = (e2m1_decode(static_cast<cuda::std::uint8_t>((packed >> (4 * i)) & 0xFu)) * sf) * decode_scale;
  }
}

}  // namespace fp4fuse
