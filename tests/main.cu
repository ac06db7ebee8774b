// Test runner shared by every test executable (Catch2 v2 or v3).
//
//   <test> [catch2 args...]          CPU tests: every test not tagged [gpu]
//   <test> --gpu [catch2 args...]    GPU tests: exits 77 (Meson's SKIP) when no CUDA device exists
//   --seed N (or FP4FUSE_SEED=N)     fixes the random seed; otherwise a fresh one is drawn and printed
#if defined(FP4FUSE_CATCH2_V3)
#  include <catch2/catch_session.hpp>
#else
#  define CATCH_CONFIG_RUNNER
#  include <catch2/catch.hpp>
#endif

#include "test_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {
std::uint64_t g_seed = 0;
}

std::uint64_t fp4fuse_test::seed() { return g_seed; }

int main(int argc, char** argv) {
  bool gpu = false;
  bool have_seed = false;
  bool have_filter = false;
  bool have_order = false;
  std::vector<char*> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpu") {
      gpu = true;
    } else if (a == "--seed" && i + 1 < argc) {
      g_seed = std::strtoull(argv[++i], nullptr, 0);
      have_seed = true;
    } else {
      if (!a.empty() && a[0] != '-') {
        have_filter = true;
      }
      have_order = have_order || a == "--order" || a.rfind("--order=", 0) == 0;
      args.push_back(argv[i]);
    }
  }
  if (!have_seed) {
    if (const char* env = std::getenv("FP4FUSE_SEED")) {
      g_seed = std::strtoull(env, nullptr, 0);
    } else {
      std::random_device rd;
      g_seed = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    }
  }
  std::printf("fp4fuse tests: seed %llu (rerun with --seed %llu)\n", static_cast<unsigned long long>(g_seed),
              static_cast<unsigned long long>(g_seed));

  std::string filter = gpu ? "[gpu]" : "~[gpu]";
  if (gpu) {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
      std::printf("SKIP: no CUDA device (%s); GPU tests not run\n",
                  err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
      return 77;
    }
    cudaDeviceProp prop{};
    if (const cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
      std::printf("FAIL: a CUDA device exists but its properties cannot be read (%s)\n", cudaGetErrorString(e));
      return 1;
    }
    std::printf("GPU: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  }
  if (!have_filter) {
    args.push_back(const_cast<char*>(filter.c_str()));
  }
  // Declaration order unless asked otherwise (Catch2 3.9 made random order the default): some
  // files place a case first or last on purpose (the GPU probe's first call; a device reset).
  static char order_flag[] = "--order", order_decl[] = "decl";
  if (!have_order) {
    args.push_back(order_flag);
    args.push_back(order_decl);
  }
  Catch::Session session;
  const int rc = session.applyCommandLine(static_cast<int>(args.size()), args.data());
  if (rc != 0) {
    return rc;
  }
  return session.run();
}
