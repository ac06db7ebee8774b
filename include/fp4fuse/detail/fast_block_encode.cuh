#pragma once
// The standalone kernels' block quantizer: the same bits as `block_codec<Format>::quantize`, with
// fewer instructions per element on targets without the E2M1 `cvt` (sm_90a). Not part of the public
// API.
//
// Where it saves (a block of NVFP4 on sm_90a; bench/HISTORY.md, sixth session, has the counts):
// - NaN handling once per block rather than per element: a block whose values are all finite and
//   whose multiplier is finite cannot produce a NaN product, so the encoder needs no NaN-propagating
//   min, no NaN test per 8 values and no per-element fallback; every other block takes the
//   codec's own `quantize` / `encode` (the exact reference path, unchanged).
// - The magnitude codes are packed with integer shift-adds (the low 16 bits of
//   sum(bits(2^23 + c_i) << 4i) are the nibbles: the 2^23 terms only reach bit 16 and above).
// - The signs are gathered with byte permutes (`prmt` with sign replication) from the inputs' sign
//   bits: 6-8 instructions per 8 values instead of two multiply-adds per value.
// - The amax of 16-bit inputs is an integer maximum of the magnitude bits, two halves at a time.
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>

#include "fp4fuse/config.cuh"
#include "fp4fuse/nan_policy.cuh"
#include "fp4fuse/detail/bits.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/format.cuh"

namespace fp4fuse::detail {

/// PTX `prmt.b32` (generic mode): byte n of the result is byte (sel >> 4n) & 7 of {b, a}, or that
/// byte's sign replicated over all 8 bits when bit 3 of the nibble is set (`__byte_perm` ignores
/// the sign mode; `cuda::ptx::prmt` is not in CCCL 2.8, this library's minimum, which CUDA 12.9
/// ships).
FP4FUSE_DEVICE cuda::std::uint32_t prmt(cuda::std::uint32_t a, cuda::std::uint32_t b, cuda::std::uint32_t sel) {
  cuda::std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

/// max that returns NaN if either input is NaN (PTX `max.NaN`, sm_80+).
FP4FUSE_DEVICE float max_propagating_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

/// Sign masks of 8 values: byte k of `even` is 0xFF where value 2k is negative (sign bit set), of
/// `odd` where value 2k + 1 is.
struct sign_bytes {
  cuda::std::uint32_t even, odd;
};

/// The sign masks of 8 floats (their bit patterns' bit 31).
FP4FUSE_DEVICE sign_bytes sign_bytes_of_floats(const float* y) {
  const auto b = [&](int i) { return float_bits(y[i]); };
  // [s0, s2, s0, s2] etc.: byte 3 of a (0xB) and byte 3 of b (0xF), sign-replicated.
  const cuda::std::uint32_t a = prmt(b(0), b(2), 0xFBFBu), c = prmt(b(4), b(6), 0xFBFBu);
  const cuda::std::uint32_t d = prmt(b(1), b(3), 0xFBFBu), e = prmt(b(5), b(7), 0xFBFBu);
  return {prmt(a, c, 0x5410u), prmt(d, e, 0x5410u)};
}

/// The sign masks of 8 16-bit values packed two per word (value 2j in the low half of w[j]).
FP4FUSE_DEVICE sign_bytes sign_bytes_of_halves(const cuda::std::uint32_t* w) {
  // [s0, s2, s1, s3]: bytes 1 (0x9) and 3 (0xB) of w[0], 1 (0xD) and 3 (0xF) of w[1], sign-replicated.
  const cuda::std::uint32_t a = prmt(w[0], w[1], 0xFBD9u), c = prmt(w[2], w[3], 0xFBD9u);
  return {prmt(a, c, 0x5410u), prmt(a, c, 0x7632u)};
}

/// bits(2^23 + code(|y|)) for a y that is not NaN: the segments of `e2m1_segments_of`, with the
/// minimum taken over the candidates' bit patterns (positive floats order as unsigned
/// integers: one 3-input VIMNMX3 instead of two or three FMNMX). `Clamp` bounds |y| by 6.5 first
/// (every |y| > 5 has code 7 and |y| <= 6.5 is unchanged, so the code is the same and the upper segment stays <= 2^23 + 7);
/// without it |y| must be below 7 (where v/2 + 4 rounds to at most 7).
template <bool Clamp>
FP4FUSE_DEVICE cuda::std::uint32_t e2m1_magnitude_bits_not_nan(float y) {
  const e2m1_segments g = e2m1_segments_of(Clamp ? fminf(fabsf(y), 6.5f) : fabsf(y), fused_mul_add{});
  const cuda::std::uint32_t lower = float_bits(g.lower), middle = float_bits(g.middle), upper = float_bits(g.upper);
  const cuda::std::uint32_t lm = lower < middle ? lower : middle;
  return lm < upper ? lm : upper;
}

/// The E2M1 magnitude codes of 8 values that are not NaN (and, unless `Clamp`, below 7 in
/// magnitude), value i in bits 4i+2..4i (bit 4i+3 clear).
template <bool Clamp>
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x8_magnitudes_not_nan(const float* y) {
  cuda::std::uint32_t c[8];
  FP4FUSE_UNROLL
  for (int i = 0; i < 8; ++i) {
    c[i] = e2m1_magnitude_bits_not_nan<Clamp>(y[i]);
  }
  // bits(2^23 + c) = 0x4B000000 + c: shifted by 4i and summed, the 0x4B000000 terms land at bit 24
  // and above (i = 0) or 28 and above (i = 1, mod 2^32), so the low 16 bits are exactly the nibbles.
  const cuda::std::uint32_t lo = c[0] + (c[1] << 4) + (c[2] << 8) + (c[3] << 12);
  const cuda::std::uint32_t hi = c[4] + (c[5] << 4) + (c[6] << 8) + (c[7] << 12);
  return prmt(lo, hi, 0x5410u);
}

/// Packed E2M1 nibbles from magnitude codes and sign masks (bit 3 of each nibble).
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x8_with_signs(cuda::std::uint32_t magnitudes, sign_bytes s) {
  return (magnitudes | (s.even & 0x08080808u)) | (s.odd & 0x80808080u);
}

/// The largest |x[i]| (+0 for none). `nan_policy::ignore`: NaN elements do not take part (a block's
/// part of a row amax). `nan_policy::propagate`: the exact block amax when every value is finite,
/// NaN or +Inf otherwise, so `!(amax <= FLT_MAX)` detects every block the fast encoder must not take.
template <class NanPolicy, int N>
FP4FUSE_DEVICE float magnitude_max(const float (&x)[N]) {
  float m = 0.0f;
  FP4FUSE_UNROLL
  for (int i = 0; i < N; ++i) {
    if constexpr (cuda::std::is_same_v<NanPolicy, nan_policy::ignore>) {
      m = max_num(m, abs_float(x[i]));
    } else {
      m = max_propagating_nan(m, fabsf(x[i]));
    }
  }
  return m;
}

/// Largest magnitude bit pattern of N 16-bit values packed two per word (N/2 words), in the low
/// 16 bits: positive bfloat16 and half values order as unsigned integers, Inf above every finite
/// value and NaN above Inf. (`__vmaxu2` is one VIMNMX.U16x2 on sm_90a, fused to VIMNMX3 in chains.)
template <int Words>
FP4FUSE_DEVICE cuda::std::uint32_t max_magnitude_bits16(const cuda::std::uint32_t* w) {
  cuda::std::uint32_t m = w[0] & 0x7FFF7FFFu;
  FP4FUSE_UNROLL
  for (int i = 1; i < Words; ++i) {
    m = __vmaxu2(m, w[i] & 0x7FFF7FFFu);
  }
  const cuda::std::uint32_t hi = m >> 16, lo = m & 0xFFFFu;
  return hi > lo ? hi : lo;
}

/// x[i] * multiplier encoded, 8 per word, for products that cannot be NaN (see
/// `quantize_block_fast`).
template <bool Clamp, int Words, class Signs>
FP4FUSE_DEVICE void encode_words_not_nan(const float (&x)[8 * Words], float multiplier, const Signs& signs, cuda::std::uint32_t (&packed)[Words]) {
  FP4FUSE_UNROLL
  for (int w = 0; w < Words; ++w) {
    float y[8];
    FP4FUSE_UNROLL
    for (int i = 0; i < 8; ++i) {
      y[i] = __fmul_rn(x[8 * w + i], multiplier);
    }
    packed[w] = e2m1x8_with_signs(e2m1x8_magnitudes_not_nan<Clamp>(y), signs(w, y));
  }
}

/// A block's quantization with the codec's numerics: blocks with a non-finite value (amax NaN or
/// Inf) or a non-finite multiplier go through `codec.quantize` / `codec.encode` unchanged; every
/// other block is encoded here, where no product can be NaN: y = x * multiplier with x finite and
/// multiplier finite and >= 0 (the codecs never return a negative one), so sign(y) = sign(x) and
/// the sign masks may come from the inputs. `amax` must equal the codec's `block_amax(x)` when every
/// x is finite and be NaN or +Inf otherwise; `signs(w, y)` gives the sign masks of the products
/// y[0..8) of word w.
template <class Codec, int B, class Signs>
FP4FUSE_DEVICE typename Codec::block_type quantize_block_fast(const Codec& codec, const float (&x)[B], float amax, const Signs& signs) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  // The conversion instruction encodes 2 values per instruction: nothing to gain here.
  (void)amax;
  (void)signs;
  return codec.quantize(x);
#else
  if (!(amax <= cuda::std::numeric_limits<float>::max())) {
    return codec.quantize(x);
  }
  const block_scale s = codec.scale_for(amax);
  if (!(s.multiplier <= cuda::std::numeric_limits<float>::max())) {
    return codec.encode(x, s);
  }
  typename Codec::block_type b;
  b.scale = s.code;
  // |y| <= fl(amax * multiplier) (rounding is monotonic): below 7 the clamp cannot act. For NVFP4
  // that holds for every block whose E4M3 scale is normal and not saturated (|y| <= 6 * 17/16).
  // The choice is made for the whole warp (a vote), so that a warp whose blocks disagree runs one
  // encoder, not both; either encoder gives the same bits where both apply. MXFP4's power-of-two
  // scales leave fl(amax * multiplier) anywhere in [4, 8): it always clamps.
  const bool below_7 = Codec::format_type::has_global_scale && __fmul_rn(amax, s.multiplier) < 7.0f;
  if (__all_sync(__activemask(), below_7)) {
    encode_words_not_nan<false>(x, s.multiplier, signs, b.packed);
  } else {
    encode_words_not_nan<true>(x, s.multiplier, signs, b.packed);
  }
  return b;
#endif
}

}  // namespace fp4fuse::detail
