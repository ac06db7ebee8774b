#pragma once
// The standalone kernels' support, by job: vector memory access (detail/vector_memory.cuh),
// division by a launch-time divisor (detail/fast_div.cuh), validation and the checked launch
// (detail/launch.cuh). Not part of the public API.
#include "fp4fuse/detail/fast_div.cuh"
#include "fp4fuse/detail/launch.cuh"
#include "fp4fuse/detail/vector_memory.cuh"
