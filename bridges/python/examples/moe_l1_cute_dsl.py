#!/usr/bin/env python3
"""The MoE L1 of one expert (hidden -> gate|up -> SwiGLU -> NVFP4) as a CuTe DSL Hopper GEMM whose
epilogue calls fp4fuse through the bridge (`fp4fuse.cute_dsl`).

    D[T, 2I] = X[T, H] x W[2I, H]^T, W's gate/up rows interleaved by 8 (rows 16j..16j+7 gate,
    16j+8..16j+15 up of outputs 8j..8j+7); out = NVFP4(act(gate) * up): packed E2M1 [T, I/2] and
    E4M3 block scales in scale_layout::swizzled_128x4 (padding bytes 0x00), recipe te_exact.

The GEMM (written for this example after the DSL's Hopper persistent dense GEMM): TMA loads into a
4-stage shared-memory pipeline (PipelineTmaAsync), one producer warp (warp group 0, registers given
away with setmaxnreg) and two consumer warp groups doing wgmma on a 128 x 256 x 64 tile (64 rows
each), persistent over the tiles (StaticPersistentTileScheduler). Three epilogues over the same
mainloop and the same 32 KB of epilogue shared memory:

- `fp32` / `bf16`: the accumulator tile, 128 x 32 at a time, into shared memory, then a TMA store
  (the check's accumulators; the unfused pipeline's GEMM).
- `nvfp4`: the fp32 tile staged in shared memory two 128 x 32 pieces at a time; each of the 256
  consumer threads takes one row's 32 interleaved gate/up columns (one 16-wide NVFP4 block) and
  calls the row form `fp4fuse_row_<act>_nvfp4_te_exact_i8_o16` (SwiGLU + block quantize, the
  library's bits), then stores 8 packed bytes and the scale byte (zero for rows past T and for the
  layout's padding columns).

No rounding is applied to the accumulators on either side: the fused epilogue feeds the fp32 wgmma
accumulators to the row form, whose fused_epilogue uses intermediate::fp32 (act(gate) * up is
quantized from fp32, not rounded to bf16 first); the check's reference is fp4fuse::swiglu_quantize
on the fp32 D of the same GEMM with intermediate::fp32 (its default). The unfused pipelines of the
benchmark read BF16 gate/up (rounded by the GEMM's store): their bits differ, by design.

    python moe_l1_cute_dsl.py LIBREF.so --check [--sizes 64,200,512,4096]
    python moe_l1_cute_dsl.py LIBREF.so --bench [--sizes 64,512,4096,16384] [--out table.md]
    CUTE_DSL_ARCH=sm_90a python moe_l1_cute_dsl.py --compile-only gemm       # no GPU: the 3 GEMMs (sm_90a only)
    CUTE_DSL_ARCH=sm_100a python moe_l1_cute_dsl.py --compile-only epilogue  # the epilogue kernel (sm_90a, sm_100a)

LIBREF.so: moe_l1_cute_dsl_ref.cu built with nvcc (the C++ library's swiglu_quantize).

--bench times device work only (DeviceTimer below: an L2 flush, then a guard kernel that holds the
GPU while the host enqueues the contender, so no host Python falls inside the timed interval).
moe_l1_cute_dsl_pingpong.py (two consumer groups on alternate tiles) is the faster example at
T <= 4096 (H200 results: bench/results/cute2.md); this cooperative one is faster at T = 16384.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import sys
import time

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32, Int32, Uint8, Uint32
from cutlass.pipeline import pipeline_init_arrive, pipeline_init_wait

from fp4fuse import cute_dsl as f4

MODELS = {  # name: (hidden H, intermediate I per expert, activation of the library's reference numbering)
    "DeepSeek-V3": (7168, 2048, "swiglu"),
    "GPT-OSS-120B": (2880, 2880, "swiglu_clamped"),
}
ACT_CODE = {"swiglu": 0, "swiglu_clamped": 2}  # fp4fuse_cute_ref_swiglu_quantize's `act`

TILE_M, TILE_N, TILE_K = 128, 256, 64
EPI_N = 32  # columns of one epilogue piece: one NVFP4 block of 16 outputs (32 interleaved gate/up columns)
EPI_SMEM_BYTES = 32 * 1024  # the same in every variant, so that the mainloops match


def set_output(gemm, out, act, tile):
    """A GEMM object's output kind, dtypes and CTA tile (M, N), checked: shared by the three examples'
    GEMM classes (the ping-pong one also inherits MoeL1Gemm's host side: dense, fused, _launch)."""
    name = type(gemm).__name__
    if out not in ("fp32", "bf16", "nvfp4"):
        raise ValueError(f"{name}: out must be fp32, bf16 or nvfp4, got {out!r}")
    if act not in ACT_CODE:
        raise ValueError(f"{name}: act must be one of {tuple(ACT_CODE)}, got {act!r}")
    gemm.out, gemm.act = out, act
    gemm.is_fused = out == "nvfp4"
    gemm.c_dtype = {"fp32": Float32, "bf16": cutlass.BFloat16, "nvfp4": Float32}[out]
    gemm.acc_dtype = Float32
    gemm.ab_dtype = cutlass.BFloat16
    gemm.tile_m, gemm.tile_n = tile
    gemm.tile_mnk = (gemm.tile_m, gemm.tile_n, TILE_K)


class MoeL1Gemm:
    """The warp-specialized TMA + wgmma GEMM; `out` = "fp32", "bf16" (TMA store of D) or "nvfp4"
    (the fused SwiGLU -> NVFP4 epilogue with activation `act`)."""

    def __init__(self, out, act="swiglu"):
        set_output(self, out, act, (TILE_M, TILE_N))
        self.atom_layout = (2, 1, 1)  # two consumer warp groups, 64 rows each
        self.num_mma_wg = 2
        self.threads = 128 * (1 + self.num_mma_wg)
        self.num_mma_threads = 128 * self.num_mma_wg
        self.epi_tile = (TILE_M, EPI_N)
        self.epi_stage = EPI_SMEM_BYTES // (TILE_M * EPI_N * self.c_dtype.width // 8)
        ab_bytes = (TILE_M + TILE_N) * TILE_K * 2
        self.ab_stage = (utils.get_smem_capacity_in_bytes("sm_90") - EPI_SMEM_BYTES - 1024) // ab_bytes
        self.epi_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=self.num_mma_threads)

    def _layouts(self):
        self.tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, cute.nvgpu.warpgroup.OperandMajorMode.K, cute.nvgpu.warpgroup.OperandMajorMode.K,
            self.acc_dtype, self.atom_layout, tiler_mn=(64, TILE_N))
        self.a_smem = sm90_utils.make_smem_layout_a(utils.LayoutEnum.ROW_MAJOR, self.tile_mnk, self.ab_dtype, self.ab_stage)
        self.b_smem = sm90_utils.make_smem_layout_b(utils.LayoutEnum.ROW_MAJOR, self.tile_mnk, self.ab_dtype, self.ab_stage)
        self.c_smem = sm90_utils.make_smem_layout_epi(self.c_dtype, utils.LayoutEnum.ROW_MAJOR, self.epi_tile, self.epi_stage)

    @cute.jit
    def dense(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, max_clusters: cutlass.Constexpr, stream):
        """D = a x b^T into c ([M, N, 1], fp32 or bf16) through TMA stores."""
        self._layouts()
        tma_a, ta = self._tma_load(a, self.a_smem, (self.tile_m, TILE_K))
        tma_b, tb = self._tma_load(b, self.b_smem, (self.tile_n, TILE_K))
        tma_c, tc = cute.nvgpu.cpasync.make_tiled_tma_atom(
            cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(self.c_smem, (None, None, 0)), self.epi_tile)
        self._launch(tma_a, ta, tma_b, tb, tma_c, tc, c, c, Float32(1.0), c.shape[0], c.shape[1], max_clusters, stream)

    @cute.jit
    def fused(self, a: cute.Tensor, b: cute.Tensor, packed: cute.Tensor, scales: cute.Tensor, S: Float32,
              max_clusters: cutlass.Constexpr, stream):
        """NVFP4(act(gate) * up) of D = a x b^T: packed [M, I/8] 32-bit words (8 E2M1 each), scales
        [round_up(M, 128) * round_up(I/16, 4)] bytes in the swizzled 128x4 layout; S the global scale."""
        self._layouts()
        tma_a, ta = self._tma_load(a, self.a_smem, (self.tile_m, TILE_K))
        tma_b, tb = self._tma_load(b, self.b_smem, (self.tile_n, TILE_K))
        # no TMA store here: the load atom of A stands in for the unused store atom's parameter
        self._launch(tma_a, ta, tma_b, tb, tma_a, ta, packed, scales, S, a.shape[0], b.shape[0], max_clusters, stream)

    @cute.jit
    def _launch(self, tma_a, ta, tma_b, tb, tma_c, tc, packed, scales, S, M, N, max_clusters: cutlass.Constexpr, stream):
        num_tiles = (cute.ceil_div(M, self.tile_m), cute.ceil_div(N, self.tile_n), 1)
        sched = utils.PersistentTileSchedulerParams(num_tiles, (1, 1, 1))
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched, max_clusters)

        @cute.struct
        class Storage:
            bars: cute.struct.MemRange[cutlass.Int64, self.ab_stage * 2]
            sA: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.a_smem)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.b_smem)], 1024]
            sC: cute.struct.Align[cute.struct.MemRange[self.c_dtype, cute.cosize(self.c_smem)], 1024]

        self.storage = Storage
        self.kernel(tma_a, ta, tma_b, tb, tma_c, tc, packed, scales, S, M, N, self.tiled_mma, self.a_smem, self.b_smem,
                    self.c_smem, sched).launch(grid=grid, block=[self.threads, 1, 1], cluster=(1, 1, 1), stream=stream)

    @staticmethod
    def _tma_load(t, smem_staged, tile):
        return cute.nvgpu.cpasync.make_tiled_tma_atom(cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(), t,
                                                      cute.slice_(smem_staged, (None, None, 0)), tile)

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor, tma_c: cute.CopyAtom,
               mC: cute.Tensor, mPacked: cute.Tensor, mScales: cute.Tensor, S: Float32, M: Int32, N: Int32,
               tiled_mma: cute.TiledMma, a_smem: cute.ComposedLayout, b_smem: cute.ComposedLayout,
               c_smem: cute.ComposedLayout, sched_params: utils.PersistentTileSchedulerParams):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(not self.is_fused):
                cute.nvgpu.cpasync.prefetch_descriptor(tma_c)

        storage = cutlass.utils.SmemAllocator().allocate(self.storage)
        tx_bytes = cute.size_in_bytes(self.ab_dtype, cute.slice_(a_smem, (None, None, 0))) + cute.size_in_bytes(
            self.ab_dtype, cute.slice_(b_smem, (None, None, 0)))
        # the producer: one thread (TMA); the consumers: one arrive per consumer warp
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bars.data_ptr(), num_stages=self.ab_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.num_mma_wg * 4),
            tx_count=tx_bytes, cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)), defer_sync=True)
        pipeline_init_arrive(cluster_shape_mn=(1, 1), is_relaxed=True)

        sA = storage.sA.get_tensor(a_smem.outer, swizzle=a_smem.inner)
        sB = storage.sB.get_tensor(b_smem.outer, swizzle=b_smem.inner)
        sC = storage.sC.get_tensor(c_smem.outer, swizzle=c_smem.inner)

        tAsA, tAgA, tBsB, tBgB, k_tiles = tma_partition_ab(tma_a, tma_b, mA, mB, sA, sB, self.tile_mnk)

        wg = cute.arch.make_warp_uniform(tidx // 128)
        thr_mma = tiled_mma.get_slice(cute.make_layout(self.num_mma_wg, stride=128)(wg - 1))
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        acc = cute.make_rmem_tensor(tiled_mma.partition_shape_C((TILE_M, TILE_N)), self.acc_dtype)

        pipeline_init_wait(cluster_shape_mn=(1, 1))

        if wg == 0:
            # ---- producer: TMA loads of A and B, k-tile by k-tile, for every tile of this CTA ----
            cute.arch.setmaxregister_decrease(40)
            if warp == 0:
                produce_ab(ab_pipe, tma_a, tma_b, tAgA, tAsA, tBgB, tBsB, k_tiles, self.ab_stage, sched_params)
        else:
            # ---- consumers: wgmma over the k-tiles, then the epilogue ----
            cute.arch.setmaxregister_increase(232)
            ctid = tidx - 128
            sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
            work = sched.initial_work_tile_info()
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stage)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stage)
            kblocks = cute.size(tCrA, mode=[2])

            # accumulators -> shared memory (the DSL example's register-to-shared partition)
            r2s_atom = sm90_utils.get_smem_store_op(utils.LayoutEnum.ROW_MAJOR, elem_ty_d=self.c_dtype, elem_ty_acc=self.acc_dtype)
            stm_atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cutlass.BFloat16)
            r2s = cute.make_tiled_copy_S(r2s_atom, cute.make_tiled_copy_C_atom(stm_atom, tiled_mma))
            thr_r2s = r2s.get_slice(ctid)
            tRS_sD = thr_r2s.partition_D(sC)
            tRS_rAcc = r2s.retile(acc)
            rD_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            tRS_rD = cute.make_rmem_tensor(rD_shape, self.acc_dtype)
            tRS_rOut = cute.make_rmem_tensor(rD_shape, self.c_dtype)
            n_rD = cute.size(tRS_rD)
            epi_pieces = TILE_N // EPI_N

            store_pipe = None
            if cutlass.const_expr(not self.is_fused):
                store_pipe = pipeline.PipelineTmaStore.create(
                    num_stages=self.epi_stage, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.num_mma_threads))
                gC = cute.local_tile(mC, cute.slice_(self.tile_mnk, (None, None, 0)), (None, None, None))
            # the row form's outputs, in registers
            vals = cute.make_rmem_tensor(cute.make_layout(2 * 16), Float32)
            pk = cute.make_rmem_tensor(cute.make_layout(2), Uint32)
            sc = cute.make_rmem_tensor(cute.make_layout(1), Uint8)
            am = cute.make_rmem_tensor(cute.make_layout(1), Float32)
            n_blocks = N // 32  # output blocks of 16 (I / 16)
            padded_blocks = (n_blocks + 3) // 4 * 4
            tiles_done = Int32(0)

            while work.is_valid_tile:
                tile = work.tile_idx
                read.reset_count()
                release.reset_count()
                acc.fill(0.0)
                tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
                cute.nvgpu.warpgroup.fence()
                # the first k-tile: issue, keep one wgmma batch in flight
                ab_pipe.consumer_wait(read)
                for kb in cutlass.range_constexpr(kblocks):
                    cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)], tCrB[(None, None, kb, read.index)], acc)
                cute.nvgpu.warpgroup.commit_group()
                read.advance()
                for k in cutlass.range(1, k_tiles, unroll=1):
                    ab_pipe.consumer_wait(read)
                    for kb in cutlass.range_constexpr(kblocks):
                        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)], tCrB[(None, None, kb, read.index)], acc)
                    cute.nvgpu.warpgroup.commit_group()
                    cute.nvgpu.warpgroup.wait_group(1)  # the previous k-tile's wgmma is done: its stage is free
                    ab_pipe.consumer_release(release)
                    release.advance()
                    read.advance()
                cute.nvgpu.warpgroup.wait_group(0)
                ab_pipe.consumer_release(release)
                release.advance()

                if cutlass.const_expr(not self.is_fused):
                    # ---- D through shared memory and TMA stores, 128 x 32 at a time ----
                    bSG_sD, bSG_gD = cute.nvgpu.cpasync.tma_partition(
                        tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                        cute.zipped_divide(gC[(None, None, tile[0], tile[1], tile[2])], self.epi_tile))
                    for e in cutlass.range_constexpr(epi_pieces):
                        for v in cutlass.range_constexpr(n_rD):
                            tRS_rD[v] = tRS_rAcc[e * n_rD + v]
                        tRS_rOut.store(tRS_rD.load().to(self.c_dtype))
                        buf = (tiles_done * epi_pieces + e) % self.epi_stage
                        cute.copy(r2s, tRS_rOut, tRS_sD[(None, None, None, buf)])
                        cute.arch.fence_proxy("async.shared", space="cta")
                        self.epi_barrier.arrive_and_wait()
                        if warp == 4:
                            cute.copy(tma_c, bSG_sD[(None, buf)], bSG_gD[(None, (0, e))])
                            store_pipe.producer_commit()
                            store_pipe.producer_acquire()
                        self.epi_barrier.arrive_and_wait()
                else:
                    # ---- fused: two 128 x 32 fp32 pieces in shared memory, then one row block per thread ----
                    row = ctid % TILE_M
                    which = ctid // TILE_M  # which of the two staged pieces this thread quantizes
                    m = tile[0] * TILE_M + row
                    for e in cutlass.range_constexpr(epi_pieces):
                        for v in cutlass.range_constexpr(n_rD):
                            tRS_rD[v] = tRS_rAcc[e * n_rD + v]
                        cute.copy(r2s, tRS_rD, tRS_sD[(None, None, None, e % 2)])
                        if cutlass.const_expr(e % 2 == 1):
                            self.epi_barrier.arrive_and_wait()
                            blk = (tile[1] * TILE_N + (e - 1) * EPI_N) // 32 + which
                            for j in cutlass.range_constexpr(32):
                                vals[j] = sC[(row, j, which)]
                            quantize_store(self.act, vals, pk, sc, am, S, mPacked, mScales, m, blk, M, n_blocks, padded_blocks)
                            self.epi_barrier.arrive_and_wait()  # the pieces may be overwritten
                tiles_done += 1
                sched.advance_to_next_work()
                work = sched.get_current_work()
            if cutlass.const_expr(not self.is_fused):
                if warp == 4:
                    store_pipe.producer_tail()


# ---- the mainloop's operands and producer: shared by the two Hopper examples' kernels ---------------
def tma_partition_ab(tma_a, tma_b, mA, mB, sA, sB, tile_mnk):
    """The CTA's TMA views of A and B for tiles of `tile_mnk` (shared memory, global memory) and the
    k-tiles per output tile: (tAsA, tAgA, tBsB, tBgB, k_tiles)."""
    # (bM, bK, RestM, RestK, RestL) / (bN, bK, RestN, RestK, RestL)
    gA = cute.local_tile(mA, cute.slice_(tile_mnk, (None, 0, None)), (None, None, None))
    gB = cute.local_tile(mB, cute.slice_(tile_mnk, (0, None, None)), (None, None, None))
    tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                                  cute.group_modes(gA, 0, 2))
    tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2),
                                                  cute.group_modes(gB, 0, 2))
    return tAsA, tAgA, tBsB, tBgB, cute.size(gA, mode=[3])


@cute.jit
def produce_ab(ab_pipe, tma_a, tma_b, tAgA, tAsA, tBgB, tBsB, k_tiles, ab_stage: cutlass.Constexpr, sched_params):
    """The producer warp: TMA loads of A and B, k-tile by k-tile, into the `ab_stage`-deep ring for
    every tile of the CTA's persistent sequence, in order (the consumers take them as they come)."""
    sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
    work = sched.initial_work_tile_info()
    state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, ab_stage)
    while work.is_valid_tile:
        tile = work.tile_idx
        tAgA_t = tAgA[(None, tile[0], None, tile[2])]
        tBgB_t = tBgB[(None, tile[1], None, tile[2])]
        for k in cutlass.range(k_tiles, unroll=1):
            ab_pipe.producer_acquire(state)
            bar = ab_pipe.producer_get_barrier(state)
            cute.copy(tma_a, tAgA_t[(None, k)], tAsA[(None, state.index)], tma_bar_ptr=bar)
            cute.copy(tma_b, tBgB_t[(None, k)], tBsB[(None, state.index)], tma_bar_ptr=bar)
            ab_pipe.producer_commit(state)
            state.advance()
        sched.advance_to_next_work()
        work = sched.get_current_work()
    ab_pipe.producer_tail(state)


# ---- one block of one row to global memory: shared by the three examples' epilogues ---------------
@cute.jit
def store_scale(mScales, code, m, blk, n_blocks, padded_blocks):
    """The scale byte of row m, block `blk` at scale_layout::swizzled_128x4::offset(m, blk); the thread
    of the last real block also zeroes the layout's padding columns of the row."""
    row_off = (m // 128) * (padded_blocks // 4) * 512 + (m % 32) * 16 + ((m % 128) // 32) * 4
    mScales[row_off + (blk // 4) * 512 + blk % 4] = code
    if blk == n_blocks - 1:
        for p in cutlass.range(n_blocks, padded_blocks, unroll=1):
            mScales[row_off + (p // 4) * 512 + p % 4] = Uint8(0)


@cute.jit
def quantize_store(act: cutlass.Constexpr, vals, pk, sc, am, S, mPacked, mScales, m, blk, M, n_blocks, padded_blocks):
    """Row m's block `blk` (32 interleaved gate/up fp32 in `vals`) through the bridge's row form with
    activation `act`; packed words and the scale byte to global memory. Rows past M get scale 0x00
    (the layout's row padding)."""
    if blk < n_blocks:
        f4.swiglu_quantize_row(vals, pk, sc, am, out=16, S=S, activation=act)
        code = sc[0]
        if m < M:
            mPacked[m, 2 * blk] = Int32(pk[0])
            mPacked[m, 2 * blk + 1] = Int32(pk[1])
        else:
            code = Uint8(0)
        store_scale(mScales, code, m, blk, n_blocks, padded_blocks)


# ---- the epilogue alone (also compiled for sm_100a: wgmma exists on sm_90a only) --------------
@cute.kernel
def epilogue_kernel(acc_g: cute.Tensor, S: Float32, packed_g: cute.Tensor, scales_g: cute.Tensor, M: Int32, N: Int32,
                    act: cutlass.Constexpr):
    """The fused epilogue of MoeL1Gemm on an fp32 D [M, N] in global memory (128 rows per CTA, two
    32-column pieces per step staged in shared memory, one row block per thread): the same
    row-form call and stores, for a target without wgmma."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    smem = cutlass.utils.SmemAllocator()
    sC = smem.allocate_tensor(Float32, cute.make_layout((TILE_M, 2 * EPI_N + 1)), byte_alignment=16)
    row = tidx % TILE_M
    which = tidx // TILE_M
    m = bidx * TILE_M + row
    vals = cute.make_rmem_tensor(cute.make_layout(32), Float32)
    pk = cute.make_rmem_tensor(cute.make_layout(2), Uint32)
    sc = cute.make_rmem_tensor(cute.make_layout(1), Uint8)
    am = cute.make_rmem_tensor(cute.make_layout(1), Float32)
    n_blocks = N // 32
    padded_blocks = (n_blocks + 3) // 4 * 4
    for pair in cutlass.range((n_blocks + 1) // 2, unroll=1):
        for j in cutlass.range_constexpr(2 * EPI_N):
            c = pair * 2 * EPI_N + j
            v = Float32(0.0)
            if m < M and c < N:
                v = acc_g[m, c]
            sC[row, j] = v
        cute.arch.sync_threads()
        for j in cutlass.range_constexpr(32):
            vals[j] = sC[row, which * 32 + j]
        quantize_store(act, vals, pk, sc, am, S, packed_g, scales_g, m, pair * 2 + which, M, n_blocks, padded_blocks)
        cute.arch.sync_threads()


@cute.jit
def epilogue_host(acc_g: cute.Tensor, S: Float32, packed_g: cute.Tensor, scales_g: cute.Tensor, M: Int32, N: Int32,
                  act: cutlass.Constexpr, stream):
    epilogue_kernel(acc_g, S, packed_g, scales_g, M, N, act).launch(
        grid=[cute.ceil_div(M, TILE_M), 1, 1], block=[2 * TILE_M, 1, 1], stream=stream)


# ---- compile without a GPU (the CI test) -----------------------------------------------------------
def ptx_facts(ptx):
    return {"target": re.findall(r"^\.target (\S+)", ptx, re.M),
            "entries": re.findall(r"^\.visible \.entry (\S+)\(", ptx, re.M),
            "calls": len(re.findall(r"^\s*call(\.uni)?\b", ptx, re.M)),
            "externs": re.findall(r"^\.extern \.func.*", ptx, re.M),
            "e2m1_cvt": len(re.findall(r"cvt\.rn\.satfinite\.e2m1x2\.f32", ptx)),
            "wgmma": len(re.findall(r"wgmma\.mma_async", ptx)),
            "tma_load": len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global", ptx)),
            "tma_store": len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared", ptx)),
            "setmaxnreg": len(re.findall(r"setmaxnreg", ptx)),
            "local": len(re.findall(r"\b(ld|st)\.local\b", ptx))}


FAKE_M, FAKE_N, FAKE_K = 256, 512, 256  # the shapes compile_only compiles with (the layouts are dynamic)


def fake_operands():
    """Fake tensors for compiling without a GPU: X [M, K, 1] and W [N, K, 1] (BF16, K-major), the
    fused output's packed words [M, N/16] and scale bytes [M * N/32], and a stream."""
    import cuda.bindings.driver as cuda

    mk = cute.runtime.make_fake_compact_tensor
    M, N, K = FAKE_M, FAKE_N, FAKE_K
    a = mk(cutlass.BFloat16, (M, K, 1), stride_order=(1, 0, 2), assumed_align=16)
    b = mk(cutlass.BFloat16, (N, K, 1), stride_order=(1, 0, 2), assumed_align=16)
    pk = mk(Int32, (M, N // 16), stride_order=(1, 0), assumed_align=16)
    scl = mk(Uint8, (M * N // 32,), assumed_align=16)
    return a, b, pk, scl, cuda.CUstream(0)


def compile_gemm(g, ops, extra=(132,), c_rank=3):
    """`g.fused` (an nvfp4 GEMM) or `g.dense` (fp32 / bf16, into a fake D of rank c_rank) compiled on
    fake_operands() `ops`, keeping the PTX; extra: the launch's arguments before the stream (the
    Hopper GEMMs' max_clusters, none on sm100)."""
    a, b, pk, scl, stream = ops
    if g.is_fused:
        return cute.compile(g.fused, a, b, pk, scl, Float32(1.0), *extra, stream, options="--keep-ptx")
    shape, order = ((FAKE_M, FAKE_N, 1), (1, 0, 2)) if c_rank == 3 else ((FAKE_M, FAKE_N), (1, 0))
    cd = cute.runtime.make_fake_compact_tensor(g.c_dtype, shape, stride_order=order, assumed_align=16)
    return cute.compile(g.dense, a, b, cd, *extra, stream, options="--keep-ptx")


def compile_epilogue(ops):
    """The epilogue kernel alone, compiled on fake_operands() `ops`: its PTX facts and compile time."""
    _, _, pk, scl, stream = ops
    accg = cute.runtime.make_fake_compact_tensor(Float32, (FAKE_M, FAKE_N), stride_order=(1, 0), assumed_align=16)
    t0 = time.time()
    c = cute.compile(epilogue_host, accg, Float32(1.0), pk, scl, Int32(FAKE_M), Int32(FAKE_N), "swiglu", stream, options="--keep-ptx")
    return dict(ptx_facts(c.__ptx__), seconds=round(time.time() - t0, 1))


def compile_only(which):
    """Compiles for CUTE_DSL_ARCH (fake tensors) and prints one JSON line of PTX facts per kernel:
    which = "gemm" (the three GEMM variants, sm_90a only) or "epilogue" (the epilogue kernel)."""
    ops = fake_operands()
    out = {}
    if which == "gemm":
        for name in ("fp32", "bf16", "nvfp4"):
            t0 = time.time()
            c = compile_gemm(MoeL1Gemm(name, "swiglu_clamped" if name == "nvfp4" else "swiglu"), ops)
            out[name] = dict(ptx_facts(c.__ptx__), seconds=round(time.time() - t0, 1))
    else:
        out["epilogue"] = compile_epilogue(ops)
    print(json.dumps(out), flush=True)


# ---- the GPU side: reference, check, bench ---------------------------------------------------------
class Reference:
    """The C++ library's swiglu_quantize (moe_l1_cute_dsl_ref.cu built by nvcc)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def swiglu_quantize(self, gu, dtype, M, I, act, S_ptr, packed_ptr, scales_ptr, stream=0):
        err = ctypes.create_string_buffer(512)
        rc = self.lib.fp4fuse_cute_ref_swiglu_quantize(
            ctypes.c_void_p(gu), dtype, ctypes.c_longlong(M), ctypes.c_longlong(I), act, ctypes.c_void_p(S_ptr),
            ctypes.c_void_p(packed_ptr), ctypes.c_void_p(scales_ptr), ctypes.c_void_p(stream), err)
        if rc:
            raise RuntimeError(err.value.decode())


class Runner:
    """Compiled kernels (one compile per variant serves every shape: the layouts are dynamic) and
    their launches on torch tensors."""

    name = "moe_l1_cute_dsl"

    def __init__(self):
        import torch
        import cuda.bindings.driver as cuda

        self.torch = torch
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        self.compiled = {}
        self.cache = {}

    def _t(self, x, dyn_dim):
        from cutlass.cute.runtime import from_dlpack

        key = (x.data_ptr(), tuple(x.shape), tuple(x.stride()), x.dtype)
        t = self.cache.get(key)
        if t is None:
            t = from_dlpack(x, assumed_align=16).mark_layout_dynamic(leading_dim=dyn_dim)
            self.cache[key] = (t, x)  # keep x alive with its view
            return t
        return t[0]

    @staticmethod
    def mnl(x):
        """[R, C] -> the GEMM's [R, C, 1] view (the batch mode's stride R*C, as the DSL's examples lay it out)."""
        return x.as_strided((x.shape[0], x.shape[1], 1), (x.shape[1], 1, x.shape[0] * x.shape[1]))

    def check_args(self, x, w):
        need = [(x.dtype == self.torch.bfloat16 and x.is_contiguous() and x.dim() == 2, "x must be a contiguous bfloat16 [T, H]"),
                (w.dtype == self.torch.bfloat16 and w.is_contiguous() and w.dim() == 2 and w.shape[1] == x.shape[1],
                 "w must be a contiguous bfloat16 [2I, H] with x's H"),
                (x.shape[1] % 8 == 0 and w.shape[0] % 32 == 0, "H must be a multiple of 8 (TMA: 16-byte rows) and 2I of 32")]
        for ok, why in need:
            if not ok:
                raise ValueError(f"moe_l1_cute_dsl: {why}; got x {x.dtype} {tuple(x.shape)}, w {w.dtype} {tuple(w.shape)}")

    def check_outputs(self, x, w, packed, scales):
        """packed: contiguous uint8 [T, I/2]; scales: uint8, round_up(T, 128) * round_up(I/16, 4) bytes."""
        T, I = x.shape[0], w.shape[0] // 2
        pc = (I // 16 + 3) // 4 * 4
        if packed.dtype != self.torch.uint8 or tuple(packed.shape) != (T, I // 2) or not packed.is_contiguous():
            raise ValueError(f"{self.name}: packed must be a contiguous uint8 [T, I/2] = [{T}, {I // 2}]")
        if scales.dtype != self.torch.uint8 or scales.numel() != (T + 127) // 128 * 128 * pc:
            raise ValueError(f"{self.name}: scales must be uint8 of round_up(T, 128) * round_up(I/16, 4) = "
                             f"{(T + 127) // 128 * 128 * pc} bytes")

    def compiled_kernel(self, key, label, build):
        """The kernel compiled for `key` by `build()`, once (it prints how long the compile took)."""
        fn = self.compiled.get(key)
        if fn is None:
            t0 = time.time()
            fn = self.compiled[key] = build()
            print(f"compiled the {label} in {time.time() - t0:.1f} s", flush=True)
        return fn

    def fused_tensors(self, x, w, packed, scales):
        """The fused GEMM's operands as DSL tensors, after the argument checks."""
        self.check_args(x, w)
        self.check_outputs(x, w, packed, scales)
        return self._t(self.mnl(x), 1), self._t(self.mnl(w), 1), self._t(packed.view(self.torch.int32), 1), self._t(scales, 0)

    def dense(self, x, w, c):
        """c[T, 2I] (float32 or bfloat16) = x w^T."""
        self.check_args(x, w)
        out = "fp32" if c.dtype == self.torch.float32 else "bf16"
        a, b, cc = self._t(self.mnl(x), 1), self._t(self.mnl(w), 1), self._t(self.mnl(c), 1)
        fn = self.compiled_kernel(out, f"{out} GEMM", lambda: cute.compile(MoeL1Gemm(out).dense, a, b, cc, self.sms, self.stream))
        fn(a, b, cc, self.stream)

    def fused(self, x, w, packed, scales, S, act):
        """packed [T, I/2] uint8, scales [round_up(T,128) * round_up(I/16,4)] uint8, S a Python float."""
        a, b, pk, sc = self.fused_tensors(x, w, packed, scales)
        fn = self.compiled_kernel(("nvfp4", act), f"fused {act} GEMM", lambda: cute.compile(
            MoeL1Gemm("nvfp4", act).fused, a, b, pk, sc, Float32(S), self.sms, self.stream))
        fn(a, b, pk, sc, Float32(S), self.stream)


def epilogue_only(run, d, packed, scales, S, act):
    """epilogue_kernel (the sm_100a-compilable epilogue) on an fp32 D in global memory."""
    T, N = d.shape
    a, pk, sc = run._t(d, 1), run._t(packed.view(run.torch.int32), 1), run._t(scales, 0)
    key = ("epilogue", act)
    fn = run.compiled.get(key)
    if fn is None:
        fn = run.compiled[key] = cute.compile(epilogue_host, a, Float32(S), pk, sc, Int32(T), Int32(N), act, run.stream)
    fn(a, Float32(S), pk, sc, Int32(T), Int32(N), run.stream)


def interleave8(w):
    """W [2I, H] with gate rows first -> gate/up rows interleaved by 8."""
    I2, H = w.shape
    return w.view(2, I2 // 16, 8, H).transpose(0, 1).reshape(I2, H).contiguous()


def check(run, ref, seed, sizes):
    """The fused output vs fp4fuse::swiglu_quantize on the same GEMM's fp32 D, every byte of the
    packed output and of the whole scale buffer (padding included), outputs poisoned first."""
    torch = run.torch
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bad = 0
    for model, (H, I, act) in MODELS.items():
        w = interleave8(torch.randn(2 * I, H, device="cuda", dtype=torch.bfloat16, generator=gen).mul_(H ** -0.5))
        for T in sizes:
            x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16, generator=gen)
            pc = (I // 16 + 3) // 4 * 4
            srows = (T + 127) // 128 * 128
            S = float(torch.exp(torch.randn(1, generator=gen, device="cuda")).item() * 400)
            S_dev = torch.tensor([S], dtype=torch.float32, device="cuda")
            d = torch.full((T, 2 * I), float("nan"), device="cuda")
            run.dense(x, w, d)
            packed = torch.full((T, I // 2), 0xA5, dtype=torch.uint8, device="cuda")
            scales = torch.full((srows * pc,), 0xA5, dtype=torch.uint8, device="cuda")
            run.fused(x, w, packed, scales, S, act)
            # the epilogue alone (the kernel compiled for sm_100a in CI) on the same D
            packed_e = torch.full_like(packed, 0xC3)
            scales_e = torch.full_like(scales, 0xC3)
            epilogue_only(run, d, packed_e, scales_e, S, act)
            ref_p = torch.full_like(packed, 0x5A)
            ref_s = torch.full_like(scales, 0x5A)
            torch.cuda.synchronize()
            ref.swiglu_quantize(d.data_ptr(), 0, T, I, ACT_CODE[act], S_dev.data_ptr(), ref_p.data_ptr(), ref_s.data_ptr())
            torch.cuda.synchronize()
            # the GEMM itself, loosely against cuBLAS (a wrong GEMM would still quantize consistently)
            gemm_err = float((d - (x.float() @ w.float().t())).abs().max())
            dp, ds = int((packed != ref_p).sum()), int((scales != ref_s).sum())
            ep, es = int((packed_e != ref_p).sum()), int((scales_e != ref_s).sum())
            nz = int((ref_s != 0).sum())
            print(f"check {model} T={T}: fused GEMM {dp} of {packed.numel()} packed bytes, {ds} of {scales.numel()} scale "
                  f"bytes differ ({nz} nonzero scale bytes); epilogue kernel alone {ep} / {es} differ; "
                  f"GEMM max |D - fp32 matmul| {gemm_err:.2e}", flush=True)
            bad += dp + ds + ep + es + (0 if gemm_err < 1e-2 else 1)
            del d, x
            run.cache.clear()
        del w
        torch.cuda.empty_cache()
    return bad


class DeviceTimer:
    """Device time of one call, the L2 flushed first, with the host's enqueue time kept out.

    Each timed call is: `flush()` (the inputs leave the L2), a guard kernel (`torch.cuda._sleep`,
    one thread spinning GUARD_US on the GPU), the start event, the contender, the end event, then a
    synchronize. Why the guard: without it the GPU reaches the start event as soon as the flush ends,
    and whatever the host still does before the kernel is enqueued (argument checks, the DSL's
    argument marshalling, ctypes, torch's allocator and cuBLAS dispatch) is GPU idle time inside the
    timed interval; contenders with more Python per call would look slower. With the guard the whole
    contender is enqueued while the GPU still spins, so the interval holds only the device work (its
    kernels back to back, plus the in-stream launch gaps between them). Every enqueue is timed on the
    host too and compared with the guard: `short` counts calls whose enqueue outlasted it (then that
    sample could again hold idle time; the benchmark reports the count).
    """

    GUARD_US = 1000.0

    def __init__(self, torch, flush):
        self.torch, self.flush = torch, flush
        # cycles of the SM clock: 2000 per us makes the guard at least GUARD_US at any clock up to
        # 2 GHz (the H200's maximum is 1980 MHz)
        self.guard_cycles = int(self.GUARD_US * 2000)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush()
        s.record()
        torch.cuda._sleep(self.guard_cycles)
        e.record()
        e.synchronize()
        self.guard_us = s.elapsed_time(e) * 1000
        s.record()
        flush()
        e.record()
        e.synchronize()
        self.flush_us = s.elapsed_time(e) * 1000
        self.calls = self.short = 0

    def one(self, fn, guard=True):
        """(device us between the events, host us from the guard's launch to fn's return)."""
        torch = self.torch
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush()
        h0 = time.perf_counter()
        if guard:
            torch.cuda._sleep(self.guard_cycles)
        s.record()
        fn()
        e.record()
        host = (time.perf_counter() - h0) * 1e6
        e.synchronize()
        if guard:
            self.calls += 1
            self.short += host > self.GUARD_US
        return s.elapsed_time(e) * 1000, host


def medians_us(timer, fns, reps):
    """Median device time of each function (DeviceTimer, guarded) in interleaved rounds after two
    warm-up rounds."""
    for _ in range(2):
        for fn in fns:
            fn()
    timer.torch.cuda.synchronize()
    ts = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            ts[i].append(timer.one(fn)[0])
    return [statistics.median(t) for t in ts]


def timing_probe(timer, named, reps, label):
    """The evidence for the guard: per contender the median host enqueue time, and the median timed
    the old way (start event right after the flush, no guard) next to the guarded one. Where the
    enqueue outlasts the flush's own GPU time the old way includes idle GPU time."""
    parts = []
    for name, fn in named:
        un, host = zip(*[timer.one(fn, guard=False) for _ in range(reps)])
        gd = [timer.one(fn)[0] for _ in range(reps)]
        parts.append(f"{name} host {statistics.median(host):.1f} / unguarded {statistics.median(un):.1f} / "
                     f"guarded {statistics.median(gd):.1f}")
    print(f"  timing {label} (us; flush {timer.flush_us:.1f}, guard {timer.guard_us:.0f} on the GPU): " + "; ".join(parts), flush=True)


def bench(run, ref, sizes, reps, seed):
    torch = run.torch
    gen = torch.Generator(device="cuda").manual_seed(seed)
    flush_buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def flush():  # the inputs leave the L2 (50 MB on the H200) before every timed launch
        flush_buf.view(torch.int64).sum()

    timer = DeviceTimer(torch, flush)

    rows = []
    for model, (H, I, act) in MODELS.items():
        w = interleave8(torch.randn(2 * I, H, device="cuda", dtype=torch.bfloat16, generator=gen).mul_(H ** -0.5))
        wt = w.t()
        for T in sizes:
            x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16, generator=gen)
            pc = (I // 16 + 3) // 4 * 4
            S = 2688.0 / 4.0
            S_dev = torch.tensor([S], dtype=torch.float32, device="cuda")
            packed = torch.empty(T, I // 2, dtype=torch.uint8, device="cuda")
            scales = torch.empty((T + 127) // 128 * 128 * pc, dtype=torch.uint8, device="cuda")
            gu = torch.empty(T, 2 * I, dtype=torch.bfloat16, device="cuda")
            st = torch.cuda.current_stream().cuda_stream

            def sq(src):
                ref.swiglu_quantize(src.data_ptr(), 1, T, I, ACT_CODE[act], S_dev.data_ptr(), packed.data_ptr(),
                                    scales.data_ptr(), st)

            fused = lambda: run.fused(x, w, packed, scales, S, act)
            twin = lambda: run.dense(x, w, gu)
            contenders = [fused, twin, lambda: (twin(), sq(gu)), lambda: sq(torch.matmul(x, wt))]
            t_f, t_b, t_bs, t_cs = medians_us(timer, contenders, reps)
            timing_probe(timer, zip(("fused", "BF16-out", "BF16 + sq", "cuBLAS + sq"), contenders), max(5, reps // 3),
                         f"{model} T={T}")
            tflops = 2.0 * T * 2 * I * H / t_f / 1e6
            rows.append((model, T, t_f, tflops, t_b, t_bs, t_cs))
            print(f"{model} T={T}: fused {t_f:.1f} us ({tflops:.0f} TFLOP/s), DSL BF16-out {t_b:.1f} ({t_f / t_b:.3f}x), "
                  f"DSL BF16 + sq {t_bs:.1f} ({t_f / t_bs:.3f}x), cuBLAS + sq {t_cs:.1f} ({t_f / t_cs:.3f}x)", flush=True)
            del x, gu, packed, scales
        del w, wt
        torch.cuda.empty_cache()
    print(f"guard: {timer.calls} timed calls, {timer.short} enqueued in more than {timer.GUARD_US:.0f} us "
          f"(0: every sample is device time only)", flush=True)
    return rows


def table(rows):
    out = ["| model | T | fused DSL us (TFLOP/s) | DSL BF16-out us | fused / BF16-out | DSL BF16-out + swiglu_quantize us | "
           "fused / (DSL + sq) | cuBLAS BF16 + swiglu_quantize us | fused / (cuBLAS + sq) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for m, T, tf, tfl, tb, tbs, tcs in rows:
        out.append(f"| {m} | {T} | {tf:.1f} ({tfl:.0f}) | {tb:.1f} | {tf / tb:.3f} | {tbs:.1f} | {tf / tbs:.3f} | {tcs:.1f} | "
                   f"{tf / tcs:.3f} |")
    return "\n".join(out)


def run_cli(doc, compile_only, runner, check, bench, table, compile_choices=("gemm", "epilogue")):
    """The examples' command line: --compile-only (no GPU), or --check and / or --bench against the
    nvcc-built reference (moe_l1_cute_dsl_ref.cu)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("lib", nargs="?", help="the nvcc-built reference (moe_l1_cute_dsl_ref.cu)")
    p.add_argument("--check", action="store_true")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--compile-only", choices=list(compile_choices), help="compile for CUTE_DSL_ARCH without a GPU")
    p.add_argument("--sizes", default=None, help="comma-separated T (check: 64,200,512,4096; bench: 64,512,4096,16384)")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--out")
    a = p.parse_args()
    if a.compile_only:
        compile_only(a.compile_only)
        return 0
    if not a.lib:
        p.error("the reference library path is required for --check and --bench")
    import torch

    seed = int(os.environ.get("FP4FUSE_SEED", time.time_ns() % (1 << 31)))
    print(f"seed {seed}; {torch.cuda.get_device_name()}, torch {torch.__version__}, cutlass-dsl {f4.DSL_VERSION}", flush=True)
    ref, run = Reference(a.lib), runner()
    rc = 0
    if a.check:
        bad = check(run, ref, seed, [int(s) for s in (a.sizes or "64,200,512,4096").split(",")])
        print("CHECK PASS: fused NVFP4 bit-identical to fp4fuse::swiglu_quantize on the GEMM's fp32 accumulators" if bad == 0
              else f"CHECK FAIL: {bad} bytes differ", flush=True)
        rc = 1 if bad else 0
    if a.bench:
        t = table(bench(run, ref, [int(s) for s in (a.sizes or "64,512,4096,16384").split(",")], a.reps, seed))
        print(t)
        if a.out:
            with open(a.out, "w") as f:
                f.write(t + "\n")
    return rc


def main():
    return run_cli(__doc__, compile_only, Runner, check, bench, table)


if __name__ == "__main__":
    sys.exit(main())
