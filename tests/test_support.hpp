#pragma once
// Shared test scaffolding: Catch2 v2/v3 compatibility, the run's random seed, CUDA error checks,
// and helpers to read/write float bit patterns.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(FP4FUSE_CATCH2_V3)
#  include <catch2/catch_test_macros.hpp>
#  include <catch2/catch_message.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <cuda_runtime.h>

namespace fp4fuse_test {

/// The run's seed: from `--seed N` or FP4FUSE_SEED, otherwise from std::random_device. Printed by
/// main before any test runs.
std::uint64_t seed();

/// A generator seeded from the run's seed and a per-test salt, so tests draw independent streams.
inline std::mt19937_64 rng(const char* salt) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* p = salt; *p; ++p) {
    h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  }
  return std::mt19937_64(seed() ^ h);
}

inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

/// A float of random sign, exponent spread over [2^lo, 2^hi) and random mantissa.
inline float random_magnitude(std::mt19937_64& g, int lo, int hi) {
  std::uniform_int_distribution<int> e(lo, hi - 1);
  const std::uint32_t mant = static_cast<std::uint32_t>(g()) & 0x7FFFFFu;
  const std::uint32_t sign = static_cast<std::uint32_t>(g() & 1u) << 31;
  const int biased = std::min(std::max(e(g) + 127, 0), 254);  // below 2^-126: subnormals
  return float_of(sign | (static_cast<std::uint32_t>(biased) << 23) | mant);
}

inline std::string hex32(std::uint32_t u) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", u);
  return buf;
}

}  // namespace fp4fuse_test

/// REQUIREs that a CUDA runtime call succeeded, naming the call and the error.
#define FP4FUSE_TEST_CUDA(expr)                                                           \
  do {                                                                                     \
    const cudaError_t fp4fuse_test_err = (expr);                                           \
    INFO(#expr << " -> " << cudaGetErrorName(fp4fuse_test_err) << ": "                    \
               << cudaGetErrorString(fp4fuse_test_err));                                   \
    REQUIRE(fp4fuse_test_err == cudaSuccess);                                              \
  } while (0)

/// After a kernel launch: the launch error, then a synchronising check of the execution error.
#define FP4FUSE_TEST_LAUNCHED()                      \
  do {                                               \
    FP4FUSE_TEST_CUDA(cudaGetLastError());           \
    FP4FUSE_TEST_CUDA(cudaDeviceSynchronize());      \
  } while (0)

namespace fp4fuse_test {

/// Every float bit pattern within `ulps` of each center, both signs (centers are magnitudes).
inline std::vector<std::uint32_t> floats_near(const std::vector<float>& centers, int ulps = 16) {
  std::vector<std::uint32_t> out;
  for (float c : centers) {
    const std::int64_t b = bits_of(c);
    for (std::int64_t d = -ulps; d <= ulps; ++d) {
      const std::int64_t u = b + d;
      if (u < 0 || u > 0x7FFFFFFF) {
        continue;
      }
      out.push_back(static_cast<std::uint32_t>(u));
      out.push_back(static_cast<std::uint32_t>(u) | 0x80000000u);
    }
  }
  return out;
}

/// +-0, +-Inf, NaNs with several payloads and both signs, subnormals, the float extremes.
inline std::vector<std::uint32_t> special_floats() {
  std::vector<std::uint32_t> v = {0x00000000u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA5A5A5u,
                                  0x7FC00001u, 0x00000001u, 0x00000002u, 0x003FFFFFu, 0x00400000u, 0x007FFFFFu,
                                  0x00800000u, 0x7F7FFFFFu, 0x3F800000u, 0x00012345u};
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(v[i] | 0x80000000u);
  }
  return v;
}

/// `n` random 32-bit patterns from the run's seed and `salt`.
inline std::vector<std::uint32_t> random_bits(std::size_t n, const char* salt) {
  auto g = rng(salt);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) {
    x = static_cast<std::uint32_t>(g());
  }
  return v;
}

}  // namespace fp4fuse_test

namespace fp4fuse_test {

/// Counts inputs where `got(x) != want(x)` (as integers), recording the first few as messages.
template <class Got, class Want>
std::size_t count_mismatches(const std::vector<std::uint32_t>& inputs, Got got, Want want) {
  std::size_t bad = 0;
  for (std::uint32_t u : inputs) {
    const unsigned g = got(float_of(u)), w = want(float_of(u));
    if (g != w) {
      if (bad < 5) {
        UNSCOPED_INFO("input " << hex32(u) << " fp4fuse " << g << " oracle " << w);
      }
      ++bad;
    }
  }
  return bad;
}

/// Counts floats, over all 2^32 bit patterns, where `differs(x)` is true; two threads.
template <class Differs>
std::size_t count_all_floats(Differs differs) {
  std::size_t bad[2] = {0, 0};
  auto run = [&](int part) {
    for (std::uint64_t u = part; u < (std::uint64_t(1) << 32); u += 2) {
      bad[part] += differs(float_of(static_cast<std::uint32_t>(u))) ? 1 : 0;
    }
  };
  std::thread t(run, 1);
  run(0);
  t.join();
  return bad[0] + bad[1];
}

}  // namespace fp4fuse_test
