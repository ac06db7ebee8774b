#pragma once
// What the block codecs of both formats share (nvfp4.cuh, mxfp4.cuh): encoding with a block scale,
// and a whole block's amax, scale and encoding. Not part of the public API.
#include "fp4fuse/config.cuh"
#include "fp4fuse/e2m1.cuh"
#include "fp4fuse/format.cuh"

namespace fp4fuse {
namespace detail {

/// What the codecs of both formats share: encoding with a block scale, and a whole block's amax,
/// scale and encoding. `Codec` (the format's `block_codec`) provides `block_amax` and `scale_for`.
template <class Codec, class Format>
class block_codec_base {
 public:
  /// One quantized block of the format.
  using block_type = quantized_block<Format>;
  /// Elements per block.
  static constexpr int block_size = Format::block_size;

  /// Encodes a block with a scale from `scale_for`: nibble i = e2m1(x[i] * s.multiplier).
  FP4FUSE_HOST_DEVICE block_type encode(const float (&x)[block_size], block_scale s) const {
    block_type b;
    encode_scaled(x, s.multiplier, b.packed);
    b.scale = s.code;
    return b;
  }
  /// amax, scale and encoding of one block: `encode(x, scale_for(block_amax(x)))`.
  FP4FUSE_HOST_DEVICE block_type quantize(const float (&x)[block_size]) const {
    const Codec& codec = static_cast<const Codec&>(*this);
    return encode(x, codec.scale_for(Codec::block_amax(x)));
  }
};
}  // namespace detail

}  // namespace fp4fuse
