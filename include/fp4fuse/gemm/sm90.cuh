#pragma once
/// \file sm90.cuh
/// The sm_90a GEMM engine: D[M, N] = X[M, K] * W[N, K]^T, BF16 in, FP32 accumulate, one of the
/// epilogues of epilogues.cuh applied to the accumulators in registers.
//
// Persistent and warp-specialized: warpgroup 0 is the producer (one thread issues TMA loads of
// BlockM x 64 X tiles and BlockN x 64 W tiles, 128-byte swizzled, into a shared-memory ring guarded
// by mbarriers); warpgroups 1 and 2 (and 3 for the grouped GEMM's 192-row tiles, whose X the
// producer loads in 64-row boxes) are consumers. In the cooperative kernel all work on one
// tile: with 128- and 192-row tiles each computes 64 rows x BlockN with wgmma m64nBlockNk16, with 64-row
// tiles (small M) each computes the 64 rows x half of the columns (64 x 32 and 64 x 48 decode tiles: the first
// computes the tile, the second writes the output's padding); then each runs the epilogue on
// its fragment while the producer already fills the ring with the next work unit's stages. In
// the ping-pong kernel (large M) each consumer owns a whole 128 x 128 tile and the two alternate,
// one's epilogue overlapping the other's mainloop. Which tiles a CTA runs is the tile scheduler's
// choice, a template parameter of both kernels (sm90/schedule.cuh), so that a grouped (MoE) GEMM
// can reuse them; the dense GEMM's visits tiles M-fastest in groups of 8 M-blocks so that
// concurrently running CTAs share W tiles in L2. Edges: TMA zero-fills rows beyond M and N and
// columns beyond K, except that a lone 64-row tile over fewer rows of X (decode) loads only those
// and zeroes the rest of its ring once (plan.cuh: x_box_rows); the epilogues bounds-check.
//
// Small M (decode) cannot fill 132 SMs with 128 x 256 tiles, so the launcher picks the tile shape
// and a split of K that fill the chip (see `plan`). With K split, each split writes its FP32
// fragment to a workspace and the last split of a tile to arrive (an atomic counter) sums all
// splits in a fixed order, so the result does not depend on arrival order, and runs the epilogue.
// The workspace is the caller's, or one kept per device and stream (sm90/workspace.cuh).
//
// TMA and mbarrier operations go through CCCL's cuda::ptx; wgmma and setmaxnreg, which it does
// not wrap, are written as PTX (sm90/ptx.cuh). Compiled for any other target the kernel traps.
//
// This header only gathers the parts, one job each, in sm90/: ptx.cuh (PTX that cuda::ptx does
// not wrap), plan.cuh (tile shapes, kernel arguments, the kernel instances of each launcher, the
// planner), schedule.cuh (the tile scheduler concept and the dense scheduler),
// grouped_schedule.cuh (the grouped one), ring.cuh (the shared-memory ring and its producer),
// epilogue.cuh (the epilogue collective: how the kernels call an epilogue), staged_store.cuh (the
// BF16 store through shared memory and TMA of the kernels' 128-row tiles), kernels.cuh (the cooperative and the
// ping-pong kernels), workspace.cuh (the split-K workspace), launch.cuh and grouped_launch.cuh
// (the host side, one dispatch table).
#include "fp4fuse/gemm/sm90/epilogue.cuh"
#include "fp4fuse/gemm/sm90/grouped_launch.cuh"
#include "fp4fuse/gemm/sm90/grouped_schedule.cuh"
#include "fp4fuse/gemm/sm90/kernels.cuh"
#include "fp4fuse/gemm/sm90/launch.cuh"
#include "fp4fuse/gemm/sm90/plan.cuh"
#include "fp4fuse/gemm/sm90/ptx.cuh"
#include "fp4fuse/gemm/sm90/ring.cuh"
#include "fp4fuse/gemm/sm90/schedule.cuh"
#include "fp4fuse/gemm/sm90/staged_store.cuh"
#include "fp4fuse/gemm/sm90/workspace.cuh"
