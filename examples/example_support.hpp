#pragma once
// What the examples share: checking CUDA calls and fp4fuse results (exit 1 with the sentence), and
// command-line parsing (an option's value; whole numbers parsed strictly: a word where a number
// belongs is an error, not 0).
#include <cuda_runtime.h>

#include <fp4fuse/status.hpp>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                                                                  \
  do {                                                                                                    \
    const cudaError_t err_ = (call);                                                                      \
    if (err_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_));       \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)

/// Exits 1 with `what` and the result's sentence unless `r` is ok.
inline void check_result(const fp4fuse::result& r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", what, r.message());
    std::exit(1);
  }
}

namespace examples_cli {

/// argv[i + 1] for the option argv[i] (advancing i), or exit 2 with a sentence.
inline const char* option_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s needs a value\n", argv[i]);
    std::exit(2);
  }
  return argv[++i];
}

/// A whole decimal number, or exit 2 with a sentence naming `what`.
inline int parse_int(const char* text, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < INT_MIN || v > INT_MAX) {
    std::fprintf(stderr, "%s must be a whole number, got '%s'\n", what, text);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace examples_cli
