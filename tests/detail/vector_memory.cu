// detail/vector_memory.cuh on the host: the block store writes exactly its words' bytes (the
// streaming form too, whose evict-first hint is device-only: before, its host pass wrote nothing).
// The device forms run in the kernels' and epilogues' GPU tests.
#include <fp4fuse/detail/vector_memory.cuh>

#include <cstring>

#include "../test_support.hpp"

using namespace fp4fuse_test;

namespace {

/// Stores `Words` random words with store_block_words<Streaming> into the middle of a poisoned
/// buffer and checks the block's bytes (little-endian words in order) and that no byte around it
/// changed.
template <bool Streaming, int Words>
void check_block_store(std::mt19937_64& g) {
  alignas(16) std::uint8_t buffer[64];
  std::memset(buffer, 0xA5, sizeof buffer);
  std::uint32_t words[Words];
  for (auto& w : words) w = static_cast<std::uint32_t>(g());
  constexpr int at = 16;
  fp4fuse::detail::store_block_words<Streaming>(buffer + at, words);
  std::uint8_t expected[4 * Words];
  std::memcpy(expected, words, sizeof expected);  // the host is little-endian, as the GPU
  for (int i = 0; i < 64; ++i) {
    INFO("Streaming " << Streaming << ", " << Words << " words, byte " << i);
    const bool inside = i >= at && i < at + 4 * Words;
    CHECK(buffer[i] == (inside ? expected[i - at] : 0xA5));
  }
}

}  // namespace

TEST_CASE("store_block_words: the host pass writes the block's words, streaming or not", "[vector_memory]") {
  auto g = rng("store_block_words");
  for (int trial = 0; trial < 100; ++trial) {
    check_block_store<false, 2>(g);
    check_block_store<false, 4>(g);
    check_block_store<true, 2>(g);
    check_block_store<true, 4>(g);
  }
}
