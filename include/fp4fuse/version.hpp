#pragma once
/// \file version.hpp
/// fp4fuse's version. The single source of truth is the file VERSION at the repository root;
/// tests/version.cu checks that these macros match it (Meson passes it in).

#define FP4FUSE_VERSION_MAJOR 0
#define FP4FUSE_VERSION_MINOR 1
#define FP4FUSE_VERSION_PATCH 0
/// MAJOR*10000 + MINOR*100 + PATCH
#define FP4FUSE_VERSION (FP4FUSE_VERSION_MAJOR * 10000 + FP4FUSE_VERSION_MINOR * 100 + FP4FUSE_VERSION_PATCH)
#define FP4FUSE_VERSION_STRING "0.1.0"
