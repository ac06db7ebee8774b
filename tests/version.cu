// FP4FUSE_VERSION_* must match the VERSION file (Meson passes it in as FP4FUSE_SOURCE_VERSION).
#include <fp4fuse/version.hpp>

#include <string>

#include "test_support.hpp"

#define FP4FUSE_STR2(x) #x
#define FP4FUSE_STR(x) FP4FUSE_STR2(x)

TEST_CASE("version macros match VERSION", "[version]") {
  const std::string from_parts = std::string(FP4FUSE_STR(FP4FUSE_VERSION_MAJOR)) + "." +
                                 FP4FUSE_STR(FP4FUSE_VERSION_MINOR) + "." + FP4FUSE_STR(FP4FUSE_VERSION_PATCH);
  CHECK(std::string(FP4FUSE_VERSION_STRING) == FP4FUSE_SOURCE_VERSION);
  CHECK(from_parts == FP4FUSE_SOURCE_VERSION);
  CHECK(FP4FUSE_VERSION == FP4FUSE_VERSION_MAJOR * 10000 + FP4FUSE_VERSION_MINOR * 100 + FP4FUSE_VERSION_PATCH);
}
