#pragma once
/// \file e2m1.cuh
/// FP4 E2M1: encode (round to nearest even, saturating) and decode, one value to sixteen.
///
/// A nibble is `s e e m`: bit 3 is the sign, bits 2..0 the magnitude code 0..7 for
/// 0, 0.5, 1, 1.5, 2, 3, 4, 6. Packed forms hold element 0 in the low nibble of byte 0,
/// element 1 in its high nibble, and so on (PyTorch `float4_e2m1fn_x2` order).
///
/// Numerics (identical on every path, and to the toolkit's `__nv_cvt_float_to_fp4(x, __NV_E2M1,
/// cudaRoundNearest)`): |x| <= 0.25 -> 0, < 0.75 -> 0.5, <= 1.25 -> 1, < 1.75 -> 1.5, <= 2.5 -> 2,
/// < 3.5 -> 3, <= 5 -> 4, otherwise 6 (ties to even, saturating; +-Inf -> +-6). The sign is kept
/// for -0 and for negative values that round to zero (nibble 0x8). NaN of either sign -> 0x7 (+6):
/// that is what the toolkit's emulation does; the Blackwell instruction's NaN result has not been
/// observed by this project (no Blackwell machine), see README "Numerics".
///
/// Paths: on sm_100a/f, sm_103a, sm_110a/f, sm_120a/f the `cvt.rn.satfinite.e2m1x2.f32`
/// instruction; on the host and on sm_80/sm_89/sm_90/sm_90a a branch-free software encoder
/// (three float adds and three min operations, see `e2m1_encode_software`).
#include "fp4fuse/config.cuh"
#include "fp4fuse/detail/bits.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fp4fuse {

/// E2M1's largest value.
inline constexpr float e2m1_max = 6.0f;

namespace detail {

/// 2^23, whose ulp is 1 on [2^23, 2^24): the offset of the software encoders' segments.
inline constexpr float e2m1_code_offset = 8388608.0f;

/// The three segments of the E2M1 code map g(v) = min(2v, v + 2, v/2 + 4) at v = |x| (one segment
/// per binade of E2M1), each offset by 2^23 so that its one rounding gives an integer: the code of
/// v is the least of the three and 2^23 + 7, minus 2^23. The one formula of every software
/// encoder: `e2m1_encode_software` takes the least as floats (NaN loses), the device encoder below
/// with a NaN-propagating minimum, the standalone kernels' block encoder
/// (detail/fast_block_encode.cuh) over the bit patterns. The products are exact (2v always, v/2
/// wherever the sum's rounding can see it), so each segment rounds once whether `MulAdd` fuses
/// (`fused_mul_add`, the device encoders: one FFMA whatever -fmad says) or not
/// (`separate_mul_add`, usable in constant expressions).
struct e2m1_segments {
  float lower;   ///< 2^23 + 2v: [0, 2]
  float middle;  ///< 2^23 + v + 2: [2, 4]
  float upper;   ///< 2^23 + v/2 + 4: [4, 6]
};
template <class MulAdd>
FP4FUSE_HOST_DEVICE constexpr e2m1_segments e2m1_segments_of(float v, MulAdd mul_add) {
  return {mul_add(v, 2.0f, e2m1_code_offset), v + (e2m1_code_offset + 2.0f), mul_add(v, 0.5f, e2m1_code_offset + 4.0f)};
}
/// a * b + c with two roundings (one where the product is exact): constant expressions.
struct separate_mul_add {
  FP4FUSE_HOST_DEVICE constexpr float operator()(float a, float b, float c) const { return a * b + c; }
};
/// a * b + c with one rounding (`fmaf`): the device encoders.
struct fused_mul_add {
  FP4FUSE_DEVICE float operator()(float a, float b, float c) const { return fmaf(a, b, c); }
};

}  // namespace detail

/// Portable E2M1 encoder, usable in constant expressions and on every target.
///
/// How: the E2M1 code of v = |x| is the integer nearest to the concave piecewise-linear map
/// g(v) = min(2v, v + 2, v/2 + 4) (the rounding boundaries of E2M1 are exactly the half-integers
/// of g, and ties to even codes are ties to even mantissas), evaluated with one rounding per
/// segment (`detail::e2m1_segments_of`), so `bits(min(...)) - bits(2^23)` is the rounded code.
/// NaN loses every min and yields 7.
///
/// \return the nibble in bits 3..0 (bits 7..4 are zero).
/// \code
/// static_assert(fp4fuse::e2m1_encode_software(2.5f) == 0x4);   // tie -> 2
/// static_assert(fp4fuse::e2m1_encode_software(-0.1f) == 0x8);  // -0
/// \endcode
FP4FUSE_HOST_DEVICE constexpr cuda::std::uint8_t e2m1_encode_software(float x) {
  const cuda::std::uint32_t bits = detail::float_bits(x);
  const detail::e2m1_segments g = detail::e2m1_segments_of(detail::abs_float(x), detail::separate_mul_add{});
  const float code_f = detail::min_num(detail::min_num(g.lower, g.middle),
                                       detail::min_num(g.upper, detail::e2m1_code_offset + 7.0f));
  const cuda::std::uint32_t code = detail::float_bits(code_f) - detail::float_bits(detail::e2m1_code_offset);
  const cuda::std::uint32_t sign = detail::is_nan_bits(bits) ? 0u : (bits >> 28) & 0x8u;
  return static_cast<cuda::std::uint8_t>(code | sign);
}

namespace detail {

#if FP4FUSE_ARCH_HAS_E2M1_CVT
// `cvt.rn.satfinite.e2m1x2.f32 d, a, b` puts a in the high nibble and b in the low one.
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x2_cvt(float lo, float hi) {
  cuda::std::uint32_t out;
  asm("{\n .reg .b8 packed;\n cvt.rn.satfinite.e2m1x2.f32 packed, %2, %1;\n cvt.u32.u8 %0, packed;\n}"
      : "=r"(out) : "f"(lo), "f"(hi));
  return out;
}
FP4FUSE_DEVICE cuda::std::uint16_t e2m1x4_cvt(const float (&v)[4]) {
  cuda::std::uint16_t out;
  asm("{\n .reg .b8 b0, b1;\n"
      " cvt.rn.satfinite.e2m1x2.f32 b0, %2, %1;\n"
      " cvt.rn.satfinite.e2m1x2.f32 b1, %4, %3;\n"
      " mov.b16 %0, {b0, b1};\n}"
      : "=h"(out)
      : "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]));
  return out;
}
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x8_cvt(const float (&v)[8]) {
  return e2m1x4_cvt(*reinterpret_cast<const float(*)[4]>(&v[0])) |
         (static_cast<cuda::std::uint32_t>(e2m1x4_cvt(*reinterpret_cast<const float(*)[4]>(&v[4]))) << 16);
}
// `cvt.rn.f16x2.e2m1x2 d, a`: the low nibble of a becomes the low half of d.
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x2_to_half2_cvt(cuda::std::uint8_t byte) {
  cuda::std::uint32_t out;
  const cuda::std::uint16_t wide = byte;
  asm("{\n .reg .b8 lo, hi;\n mov.b16 {lo, hi}, %1;\n cvt.rn.f16x2.e2m1x2 %0, lo;\n}"
      : "=r"(out) : "h"(wide));
  return out;
}
#endif

/// The software encoder one value at a time: the host path of the packed encoders, and the device
/// path's exact fallback when a value is NaN (rare).
template <int N>
FP4FUSE_HOST_DEVICE cuda::std::uint32_t e2m1_encode_each(const float* v) {
  cuda::std::uint32_t out = 0;
  FP4FUSE_UNROLL
  for (int i = 0; i < N; ++i) {
    out |= static_cast<cuda::std::uint32_t>(e2m1_encode_software(v[i])) << (4 * i);
  }
  return out;
}

#if FP4FUSE_DEVICE_PASS
/// min that returns NaN if either input is NaN (PTX `min.NaN`, sm_80+).
FP4FUSE_DEVICE float min_propagating_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

/// 2^23 + code(|y|) as a float, NaN for NaN y: the software encoder's arithmetic with the sign
/// and NaN handling left to the caller. Three FMA-pipe operations and three min operations.
FP4FUSE_DEVICE float e2m1_magnitude_code_magic(float y) {
  const e2m1_segments g = e2m1_segments_of(fabsf(y), fused_mul_add{});
  const float upper = fminf(g.upper, e2m1_code_offset + 7.0f);
  return min_propagating_nan(fminf(g.lower, g.middle), upper);
}

/// Packs four magnitude codes into the low 16 bits of a float's bit pattern with exact FMAs
/// (2^23 + c0 + 16 c1 + 256 c2 + 4096 c3 < 2^24); NaN if any code is NaN.
FP4FUSE_DEVICE float e2m1x4_pack_magic(float c0, float c1, float c2, float c3) {
  float w = fmaf(c1 - e2m1_code_offset, 16.0f, c0);
  w = fmaf(c2 - e2m1_code_offset, 256.0f, w);
  return fmaf(c3 - e2m1_code_offset, 4096.0f, w);
}

/// 2^23 + the four magnitude codes of v packed in 16 bits (see `e2m1x4_pack_magic`); NaN if any
/// v[i] is NaN.
FP4FUSE_DEVICE float e2m1x4_magnitudes_magic(const float* v) {
  return e2m1x4_pack_magic(e2m1_magnitude_code_magic(v[0]), e2m1_magnitude_code_magic(v[1]),
                           e2m1_magnitude_code_magic(v[2]), e2m1_magnitude_code_magic(v[3]));
}

/// Sign bit of v[i] moved to bit 4i + 3, i < N, added to `nibbles`: a multiply-add per value (FMA
/// pipe) rather than shifts and masks.
template <int N>
FP4FUSE_DEVICE cuda::std::uint32_t e2m1_add_signs(cuda::std::uint32_t nibbles, const float* v) {
  FP4FUSE_UNROLL
  for (int i = 0; i < N; ++i) {
    nibbles += __umulhi(float_bits(v[i]), 2u) * (1u << (4 * i + 3));
  }
  return nibbles;
}

/// The software encoder for four values, arranged for the GPU's pipes: the codes are rounded and
/// packed with FMA-pipe arithmetic, the signs added with integer multiply-adds; a NaN anywhere
/// (rare) takes the exact per-element path. Bit-identical to `e2m1_encode_software` per nibble.
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x4_encode_software_device(const float (&v)[4]) {
  const float codes = e2m1x4_magnitudes_magic(v);
  if (codes != codes) {
    return e2m1_encode_each<4>(v);
  }
  return e2m1_add_signs<4>(float_bits(codes) - float_bits(e2m1_code_offset), v);
}

/// The same for eight values.
FP4FUSE_DEVICE cuda::std::uint32_t e2m1x8_encode_software_device(const float (&v)[8]) {
  const float lo = e2m1x4_magnitudes_magic(&v[0]);
  const float hi = e2m1x4_magnitudes_magic(&v[4]);
  if (lo != lo || hi != hi) {
    return e2m1_encode_each<8>(v);
  }
  return e2m1_add_signs<8>(__byte_perm(float_bits(lo), float_bits(hi), 0x5410), v);
}
#endif

/// Software decode of one nibble to f16 bits: E2M1 (bias 1) placed in f16's exponent/mantissa
/// fields (bias 15) is the value times 2^-14; callers multiply by 2^14, exactly.
FP4FUSE_HOST_DEVICE constexpr cuda::std::uint32_t e2m1_to_scaled_half_bits(cuda::std::uint32_t nibble) {
  return ((nibble & 0x8u) << 12) | ((nibble & 0x7u) << 9);
}

}  // namespace detail

/// Encodes one float to an E2M1 nibble (bits 3..0). Numerics: see the file comment.
/// \code
/// uint8_t n = fp4fuse::e2m1_encode(-3.2f);  // 0xD: sign | code 5 (3.0)
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint8_t e2m1_encode(float x) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  return static_cast<cuda::std::uint8_t>(detail::e2m1x2_cvt(x, 0.0f) & 0xFu);
#else
  return e2m1_encode_software(x);
#endif
}

/// Encodes two floats into one byte: `lo` in bits 3..0, `hi` in bits 7..4.
/// \code
/// uint8_t b = fp4fuse::e2m1x2_encode(1.0f, 6.0f);  // 0x72
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint8_t e2m1x2_encode(float lo, float hi) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  return static_cast<cuda::std::uint8_t>(detail::e2m1x2_cvt(lo, hi));
#else
  return static_cast<cuda::std::uint8_t>(e2m1_encode_software(lo) | (e2m1_encode_software(hi) << 4));
#endif
}

/// Encodes four floats into 16 bits, v[i] in bits 4i+3..4i (two bytes in the standard packed
/// order): what one thread of an mma fragment holds of an NVFP4 block.
/// \code
/// float v[4] = {0.5f, -1, 6, 2.5f};
/// uint16_t w = fp4fuse::e2m1x4_encode(v);  // 0x47A1 (2.5 ties to 2)
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint16_t e2m1x4_encode(const float (&v)[4]) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  return detail::e2m1x4_cvt(v);
#elif FP4FUSE_DEVICE_PASS
  return static_cast<cuda::std::uint16_t>(detail::e2m1x4_encode_software_device(v));
#else
  return static_cast<cuda::std::uint16_t>(detail::e2m1_encode_each<4>(v));
#endif
}

/// Encodes eight floats into a 32-bit word, v[i] in bits 4i+3..4i (little-endian bytes in memory
/// give the standard packed order).
/// \code
/// float v[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
/// uint32_t w = fp4fuse::e2m1x8_encode(v);  // 0x76543210
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint32_t e2m1x8_encode(const float (&v)[8]) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  return detail::e2m1x8_cvt(v);
#elif FP4FUSE_DEVICE_PASS
  return detail::e2m1x8_encode_software_device(v);
#else
  return detail::e2m1_encode_each<8>(v);
#endif
}

/// Encodes sixteen floats (one NVFP4 block) into a 64-bit word, v[i] in bits 4i+3..4i.
/// \code
/// float block[16] = {0.5f, -1.0f, 6.0f};  // the rest 0
/// uint64_t packed = fp4fuse::e2m1x16_encode(block);  // 0x7A1: 0.5 -> 0x1, -1 -> 0xA, 6 -> 0x7
/// \endcode
FP4FUSE_HOST_DEVICE cuda::std::uint64_t e2m1x16_encode(const float (&v)[16]) {
  const float(&lo)[8] = *reinterpret_cast<const float(*)[8]>(&v[0]);
  const float(&hi)[8] = *reinterpret_cast<const float(*)[8]>(&v[8]);
  return static_cast<cuda::std::uint64_t>(e2m1x8_encode(lo)) |
         (static_cast<cuda::std::uint64_t>(e2m1x8_encode(hi)) << 32);
}

/// Decodes a nibble (bits 3..0; higher bits ignored) to float. Exact; -0 for 0x8.
/// \code
/// static_assert(fp4fuse::e2m1_decode(0xF) == -6.0f);
/// \endcode
FP4FUSE_HOST_DEVICE constexpr float e2m1_decode(cuda::std::uint8_t nibble) {
  // Inverse of the encoder's concave map: value = max(c/2, c - 2, 2c - 8) for code c.
  const float c = static_cast<float>(nibble & 0x7u);
  const float magnitude = detail::max_num(detail::max_num(c * 0.5f, c - 2.0f), c * 2.0f - 8.0f);
  return detail::bits_float(detail::float_bits(magnitude) | ((nibble & 0x8u) ? 0x80000000u : 0u));
}

/// Decodes one byte (two nibbles) to a half2: low nibble -> `.x`, high nibble -> `.y`. Exact.
/// Uses `cvt.rn.f16x2.e2m1x2` where the target has it.
/// \code
/// const __half2 v = fp4fuse::e2m1x2_decode_half2(0x72);  // .x = 1.0 (code 2), .y = 6.0 (code 7)
/// \endcode
FP4FUSE_HOST_DEVICE __half2 e2m1x2_decode_half2(cuda::std::uint8_t byte) {
#if FP4FUSE_ARCH_HAS_E2M1_CVT
  const cuda::std::uint32_t bits = detail::e2m1x2_to_half2_cvt(byte);
  __half2_raw raw;
  raw.x = static_cast<unsigned short>(bits & 0xFFFFu);
  raw.y = static_cast<unsigned short>(bits >> 16);
  return __half2(raw);
#elif FP4FUSE_DEVICE_PASS
  __half2_raw scaled;
  scaled.x = static_cast<unsigned short>(detail::e2m1_to_scaled_half_bits(byte));
  scaled.y = static_cast<unsigned short>(detail::e2m1_to_scaled_half_bits(byte >> 4));
  // f16 arithmetic keeps subnormals on every GPU, so the 2^14 rescale is exact.
  return __hmul2(__half2(scaled), __half2half2(__ushort_as_half(0x7400)));
#else
  return __floats2half2_rn(e2m1_decode(byte & 0xFu), e2m1_decode(byte >> 4));
#endif
}

/// Decodes one byte (two nibbles) to a bfloat162: low nibble -> `.x`, high nibble -> `.y`. Exact.
/// \code
/// const __nv_bfloat162 v = fp4fuse::e2m1x2_decode_bfloat162(0xA1);  // .x = 0.5, .y = -1.0 (sign | code 2)
/// \endcode
FP4FUSE_HOST_DEVICE __nv_bfloat162 e2m1x2_decode_bfloat162(cuda::std::uint8_t byte) {
  // Every E2M1 value is exact in bf16; float is the common route.
  return __floats2bfloat162_rn(e2m1_decode(byte & 0xFu), e2m1_decode(byte >> 4));
}

/// Decodes one byte (two nibbles) to a float2: low nibble -> `.x`, high nibble -> `.y`. Exact.
/// \code
/// const float2 v = fp4fuse::e2m1x2_decode_float2(0x72);  // {1.0f, 6.0f}
/// \endcode
FP4FUSE_HOST_DEVICE float2 e2m1x2_decode_float2(cuda::std::uint8_t byte) {
#if FP4FUSE_DEVICE_PASS
  return __half22float2(e2m1x2_decode_half2(byte));
#else
  return make_float2(e2m1_decode(byte & 0xFu), e2m1_decode(byte >> 4));
#endif
}

namespace detail {
/// E2M1 codes of x[i] * multiplier, 8 per word: the encoding step every recipe of both formats
/// shares.
template <int Words>
FP4FUSE_HOST_DEVICE void encode_scaled(const float (&x)[8 * Words], float multiplier, cuda::std::uint32_t (&packed)[Words]) {
  FP4FUSE_UNROLL
  for (int w = 0; w < Words; ++w) {
    float y[8];
    FP4FUSE_UNROLL
    for (int i = 0; i < 8; ++i) {
      y[i] = x[8 * w + i] * multiplier;
    }
    packed[w] = e2m1x8_encode(y);
  }
}

/// The E2M1 value of element i of a packed block.
template <int Words>
FP4FUSE_HOST_DEVICE float packed_element(const cuda::std::uint32_t (&packed)[Words], int i) {
  return e2m1_decode(static_cast<cuda::std::uint8_t>((packed[i / 8] >> (4 * (i % 8))) & 0xFu));
}
}  // namespace detail

}  // namespace fp4fuse
