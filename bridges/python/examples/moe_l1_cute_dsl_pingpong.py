#!/usr/bin/env python3
"""The ping-pong variant of moe_l1_cute_dsl.py (same problem, same epilogues, same check and
benchmark; the nvcc reference, the models and the epilogue kernel are imported from it).

STATUS: ran on the H200 (2026-12-01). A first version was bit-identical wherever a CTA had at
most one tile per consumer warp group and failed (cudaErrorLaunchFailure) with two or more: the
second group waited on stages of its tile by mbarrier phase parity while the first group's whole
tile lay between, so an earlier fill looked complete. With the mainloop turn (named barriers 3 and
4 below) --check passed at both models, T = 64, 200, 512, 4096, all four tile shapes (64x64 at
T = 4096: many tiles per group), 0 bytes differ (seed 1033780374). Timing: bench/results/cute2.md.

The GEMM: TMA loads into a shared-memory pipeline (PipelineTmaAsync, 4 to 12 stages of 64-deep
k-tiles), one producer warp (warp group 0, registers given away with setmaxnreg) and two consumer
warp groups in ping-pong: each takes alternate output tiles (TILES: 128x128, 64x256, 64x128 or
64x64 per group) of the CTA's persistent sequence (StaticPersistentTileScheduler), their mainloops
take turns, and one group's epilogue runs under the other's mainloop (the point: the fused
epilogue, SwiGLU + block quantize with software E2M1 on sm_90a, costs more than a BF16 store, and
the cooperative example cannot hide it). Epilogues as in moe_l1_cute_dsl.py, in 64 x 32 pieces,
16 KB of epilogue shared memory per group; the fused one has each of the group's 128 threads
quantize one row block of 32 interleaved gate/up columns with the row form
`fp4fuse_row_<act>_nvfp4_te_exact_i8_o16`. Accumulators are not rounded (intermediate::fp32).

    python moe_l1_cute_dsl_pingpong.py LIBREF.so --check [--sizes 64,200,512,4096]   # rotates over TILES
    python moe_l1_cute_dsl_pingpong.py LIBREF.so --bench [--sizes 64,512,4096,16384]  # tunes the tile per shape
    CUTE_DSL_ARCH=sm_90a python moe_l1_cute_dsl_pingpong.py --compile-only gemm        # no GPU
"""
import json
import sys
import time

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float32, Int32, Uint8, Uint32
from cutlass.pipeline import pipeline_init_arrive, pipeline_init_wait

# shared with the cooperative example: models, the nvcc reference, the epilogue kernel, PTX facts, timing
from moe_l1_cute_dsl import (ACT_CODE, MODELS, DeviceTimer, compile_epilogue, compile_gemm, epilogue_only, fake_operands,
                             interleave8, medians_us, produce_ab, ptx_facts, quantize_store, run_cli, set_output, store_scale, timing_probe,
                             tma_partition_ab)
from moe_l1_cute_dsl import MoeL1Gemm as CooperativeGemm
from moe_l1_cute_dsl import Runner as CooperativeRunner

TILE_K = 64
EPI_M, EPI_N = 64, 32  # one epilogue piece: 64 rows x one NVFP4 block (32 interleaved gate/up columns -> 16 outputs)
EPI_SMEM_BYTES = 32 * 1024  # the same in every variant, so that the mainloops match
TILES = ((128, 128), (64, 256), (64, 128), (64, 64))  # per consumer warp group (M, N); the benchmark tries each


class MoeL1Gemm(CooperativeGemm):
    """The warp-specialized TMA + wgmma GEMM; `out` = "fp32", "bf16" (TMA store of D) or "nvfp4"
    (the fused SwiGLU -> NVFP4 epilogue with activation `act`); `tile` = (M, N) of one consumer
    warp group's output tile (one of TILES).

    Ping-pong: two consumer warp groups take alternate tiles of the CTA's persistent sequence, so
    that one group's epilogue runs while the other's wgmma mainloop keeps the tensor cores busy
    (the epilogue of the fused variant is heavier than a BF16 store: SwiGLU, block amax, scale,
    E2M1 in software on sm_90a). The producer warp loads every tile's k-tiles in order into the
    shared pipeline; each stage is consumed by one warp group, which skips the other's k-tiles."""

    def __init__(self, out, act="swiglu", tile=(128, 128)):
        if tuple(tile) not in TILES:
            raise ValueError(f"MoeL1Gemm: tile must be one of {TILES} (per warp group, at most 128 accumulators a thread), got {tile!r}")
        set_output(self, out, act, tile)
        self.threads = 128 * 3  # warp group 0: the producer; 1 and 2: the ping-pong consumers
        self.epi_tile = (EPI_M, EPI_N)
        # epilogue buffers per consumer warp group (the two groups' epilogues may overlap)
        self.epi_stage = EPI_SMEM_BYTES // 2 // (EPI_M * EPI_N * self.c_dtype.width // 8)
        ab_bytes = (self.tile_m + self.tile_n) * TILE_K * 2
        self.ab_stage = min(12, (utils.get_smem_capacity_in_bytes("sm_90") - EPI_SMEM_BYTES - 1024) // ab_bytes)

    def _layouts(self):
        self.tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, cute.nvgpu.warpgroup.OperandMajorMode.K, cute.nvgpu.warpgroup.OperandMajorMode.K,
            self.acc_dtype, (1, 1, 1), tiler_mn=(64, self.tile_n))
        self.a_smem = sm90_utils.make_smem_layout_a(utils.LayoutEnum.ROW_MAJOR, self.tile_mnk, self.ab_dtype, self.ab_stage)
        self.b_smem = sm90_utils.make_smem_layout_b(utils.LayoutEnum.ROW_MAJOR, self.tile_mnk, self.ab_dtype, self.ab_stage)
        self.c_smem = sm90_utils.make_smem_layout_epi(self.c_dtype, utils.LayoutEnum.ROW_MAJOR, self.epi_tile, 2 * self.epi_stage)

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
        # the producer: one thread (TMA); a stage's consumer: the 4 warps of one consumer warp group
        ab_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bars.data_ptr(), num_stages=self.ab_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            tx_count=tx_bytes, cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)), defer_sync=True)
        pipeline_init_arrive(cluster_shape_mn=(1, 1), is_relaxed=True)

        sA = storage.sA.get_tensor(a_smem.outer, swizzle=a_smem.inner)
        sB = storage.sB.get_tensor(b_smem.outer, swizzle=b_smem.inner)
        sC = storage.sC.get_tensor(c_smem.outer, swizzle=c_smem.inner)

        tAsA, tAgA, tBsB, tBgB, k_tiles = tma_partition_ab(tma_a, tma_b, mA, mB, sA, sB, self.tile_mnk)

        wg = cute.arch.make_warp_uniform(tidx // 128)
        thr_mma = tiled_mma.get_slice(0)  # one warp group per tile: every consumer group takes slice 0
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        acc = cute.make_rmem_tensor(tiled_mma.partition_shape_C((self.tile_m, self.tile_n)), self.acc_dtype)

        pipeline_init_wait(cluster_shape_mn=(1, 1))

        if wg == 0:
            # ---- producer: TMA loads of A and B, k-tile by k-tile, for every tile of this CTA ----
            cute.arch.setmaxregister_decrease(40)
            if warp == 0:
                produce_ab(ab_pipe, tma_a, tma_b, tAgA, tAsA, tBgB, tBsB, k_tiles, self.ab_stage, sched_params)
        else:
            # ---- consumers: warp group c = wg - 1 takes tiles c, c + 2, ... of the CTA's sequence ----
            cute.arch.setmaxregister_increase(232)
            c = wg - 1
            wtid = tidx % 128
            bar_id = 1 + c  # the group's own named barrier (0 is __syncthreads)
            sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stage)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ab_stage)
            if c == 1:
                sched.advance_to_next_work()
                read.advance(k_tiles)
                release.advance(k_tiles)
            work = sched.get_current_work()
            kblocks = cute.size(tCrA, mode=[2])

            # accumulators -> shared memory (the DSL example's register-to-shared partition)
            r2s_atom = sm90_utils.get_smem_store_op(utils.LayoutEnum.ROW_MAJOR, elem_ty_d=self.c_dtype, elem_ty_acc=self.acc_dtype)
            stm_atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cutlass.BFloat16)
            r2s = cute.make_tiled_copy_S(r2s_atom, cute.make_tiled_copy_C_atom(stm_atom, tiled_mma))
            thr_r2s = r2s.get_slice(wtid)
            tRS_sD = thr_r2s.partition_D(sC)
            tRS_rAcc = r2s.retile(acc)
            rD_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            tRS_rD = cute.make_rmem_tensor(rD_shape, self.acc_dtype)
            tRS_rOut = cute.make_rmem_tensor(rD_shape, self.c_dtype)
            n_rD = cute.size(tRS_rD)
            pieces_n = self.tile_n // EPI_N
            pieces = (self.tile_m // EPI_M) * pieces_n  # row-major over (M, N) pieces, as the DSL example orders them

            store_pipe = None
            if cutlass.const_expr(not self.is_fused):
                store_pipe = pipeline.PipelineTmaStore.create(
                    num_stages=self.epi_stage, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128))
                gC = cute.local_tile(mC, cute.slice_(self.tile_mnk, (None, None, 0)), (None, None, None))
            # the row form's arguments, in registers
            vals = cute.make_rmem_tensor(cute.make_layout(32), Float32)
            pk = cute.make_rmem_tensor(cute.make_layout(2), Uint32)
            sc = cute.make_rmem_tensor(cute.make_layout(1), Uint8)
            am = cute.make_rmem_tensor(cute.make_layout(1), Float32)
            n_blocks = N // 32  # output blocks of 16 (I / 16)
            padded_blocks = (n_blocks + 3) // 4 * 4
            m_tiles = cute.ceil_div(M, self.tile_m)
            pieces_done = Int32(0)

            total_tiles = m_tiles * cute.ceil_div(N, self.tile_n)
            my_tiles = Int32(0)
            while work.is_valid_tile:
                tile = work.tile_idx
                # The mainloops take turns (group 0 first). Without the turn, a group waiting for
                # its tile's first stage could see an earlier fill of that stage as complete: the
                # full barriers are waited on by phase parity, which cannot tell fills apart that
                # are two or more phases apart (the other group's whole tile lies between).
                if (c == 1) | (my_tiles > 0):
                    cute.arch.barrier(barrier_id=3 + c, number_of_threads=256)
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
                # every stage of this tile has been seen full: the other group's next tile (if it
                # exists: no arrive may be left unmatched) may start waiting on its stages
                if sched._current_work_linear_idx + sched.num_persistent_clusters < total_tiles:
                    cute.arch.barrier_arrive(barrier_id=4 - c, number_of_threads=256)
                cute.nvgpu.warpgroup.wait_group(0)
                ab_pipe.consumer_release(release)
                release.advance()
                # the other group's tile: its k-tiles are not ours
                read.advance(k_tiles)
                release.advance(k_tiles)

                if cutlass.const_expr(not self.is_fused):
                    # ---- D through shared memory and TMA stores, 64 x 32 at a time ----
                    bSG_sD, bSG_gD = cute.nvgpu.cpasync.tma_partition(
                        tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                        cute.zipped_divide(gC[(None, None, tile[0], tile[1], tile[2])], self.epi_tile))
                    for e in cutlass.range_constexpr(pieces):
                        for v in cutlass.range_constexpr(n_rD):
                            tRS_rD[v] = tRS_rAcc[e * n_rD + v]
                        tRS_rOut.store(tRS_rD.load().to(self.c_dtype))
                        buf = c * self.epi_stage + (pieces_done + e) % self.epi_stage
                        cute.copy(r2s, tRS_rOut, tRS_sD[(None, None, None, buf)])
                        cute.arch.fence_proxy("async.shared", space="cta")
                        cute.arch.barrier(barrier_id=bar_id, number_of_threads=128)
                        if wtid < 32:
                            cute.copy(tma_c, bSG_sD[(None, buf)], bSG_gD[(None, (e // pieces_n, e % pieces_n))])
                            store_pipe.producer_commit()
                            store_pipe.producer_acquire()
                        cute.arch.barrier(barrier_id=bar_id, number_of_threads=128)
                    pieces_done += pieces
                else:
                    # ---- fused: two 64 x 32 fp32 pieces in shared memory, then one row block per thread ----
                    row = wtid % EPI_M
                    which = wtid // EPI_M  # which of the two staged pieces this thread quantizes
                    for e in cutlass.range_constexpr(pieces):
                        for v in cutlass.range_constexpr(n_rD):
                            tRS_rD[v] = tRS_rAcc[e * n_rD + v]
                        cute.copy(r2s, tRS_rD, tRS_sD[(None, None, None, 2 * c + e % 2)])
                        if cutlass.const_expr(e % 2 == 1):
                            cute.arch.barrier(barrier_id=bar_id, number_of_threads=128)
                            # pieces e - 1 and e: the same 64 rows, adjacent blocks
                            m = tile[0] * self.tile_m + (e // pieces_n) * EPI_M + row
                            blk = (tile[1] * self.tile_n + ((e - 1) % pieces_n) * EPI_N) // 32 + which
                            for j in cutlass.range_constexpr(32):
                                vals[j] = sC[(row, j, 2 * c + which)]
                            # a 64-row tile in the first half of the last 128-row band: its second half is padding
                            pad_half = False
                            if cutlass.const_expr(self.tile_m == 64):
                                pad_half = (tile[0] == m_tiles - 1) & (tile[0] % 2 == 0)
                            quantize_store(self.act, vals, pk, sc, am, S, mPacked, mScales, m, blk, M, n_blocks, padded_blocks)
                            if pad_half:  # row m + 64 is the band's padding: scale 0x00
                                if blk < n_blocks:
                                    store_scale(mScales, Uint8(0), m + 64, blk, n_blocks, padded_blocks)
                            cute.arch.barrier(barrier_id=bar_id, number_of_threads=128)  # the pieces may be overwritten
                my_tiles += 1
                sched.advance_to_next_work(advance_count=2)
                work = sched.get_current_work()
            if cutlass.const_expr(not self.is_fused):
                if wtid < 32:
                    store_pipe.producer_tail()


# ---- compile without a GPU (the CI test) -----------------------------------------------------------
def compile_only(which):
    """Compiles for CUTE_DSL_ARCH (fake tensors) and prints one JSON line of PTX facts per kernel:
    which = "gemm" (the three GEMM variants at each tile, sm_90a only) or "epilogue" (the epilogue kernel)."""
    ops = fake_operands()
    out = {}
    if which == "gemm":
        for name, tile in [(n, t) for t in TILES for n in ("fp32", "bf16", "nvfp4")]:
            t0 = time.time()
            c = compile_gemm(MoeL1Gemm(name, "swiglu_clamped" if name == "nvfp4" else "swiglu", tile), ops)
            out[f"{name}_{tile[0]}x{tile[1]}"] = dict(ptx_facts(c.__ptx__), seconds=round(time.time() - t0, 1))
    else:
        out["epilogue"] = compile_epilogue(ops)
    print(json.dumps(out), flush=True)


class Runner(CooperativeRunner):
    """moe_l1_cute_dsl.Runner (argument checks, tensor cache) launching the ping-pong GEMMs, one
    compile per variant and tile shape."""

    def dense(self, x, w, c, tile=(128, 128)):
        """c[T, 2I] (float32 or bfloat16) = x w^T (`tile`: one of TILES)."""
        self.check_args(x, w)
        out = "fp32" if c.dtype == self.torch.float32 else "bf16"
        a, b, cc = self._t(self.mnl(x), 1), self._t(self.mnl(w), 1), self._t(self.mnl(c), 1)
        fn = self.compiled_kernel((out, tuple(tile)), f"{out} GEMM, tile {tile},", lambda: cute.compile(
            MoeL1Gemm(out, tile=tile).dense, a, b, cc, self.sms, self.stream))
        fn(a, b, cc, self.stream)

    def fused(self, x, w, packed, scales, S, act, tile=(128, 128)):
        """packed [T, I/2] uint8, scales [round_up(T,128) * round_up(I/16,4)] uint8, S a Python float."""
        a, b, pk, sc = self.fused_tensors(x, w, packed, scales)
        fn = self.compiled_kernel(("nvfp4", act, tuple(tile)), f"fused {act} GEMM, tile {tile},", lambda: cute.compile(
            MoeL1Gemm("nvfp4", act, tile).fused, a, b, pk, sc, Float32(S), self.sms, self.stream))
        fn(a, b, pk, sc, Float32(S), self.stream)


def check(run, ref, seed, sizes):
    """The fused output vs fp4fuse::swiglu_quantize on the same GEMM's fp32 D, every byte of the
    packed output and of the whole scale buffer (padding included), outputs poisoned first."""
    torch = run.torch
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bad = 0
    for mi, (model, (H, I, act)) in enumerate(MODELS.items()):
        case = 2 * mi  # the second model starts two tile shapes later: T = 64 and 200 meet 64-row tiles
        w = interleave8(torch.randn(2 * I, H, device="cuda", dtype=torch.bfloat16, generator=gen).mul_(H ** -0.5))
        for T in sizes:
            tile = TILES[case % len(TILES)]  # every tile shape, rotating over the cases
            case += 1
            x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16, generator=gen)
            pc = (I // 16 + 3) // 4 * 4
            srows = (T + 127) // 128 * 128
            S = float(torch.exp(torch.randn(1, generator=gen, device="cuda")).item() * 400)
            S_dev = torch.tensor([S], dtype=torch.float32, device="cuda")
            d = torch.full((T, 2 * I), float("nan"), device="cuda")
            run.dense(x, w, d, tile)
            packed = torch.full((T, I // 2), 0xA5, dtype=torch.uint8, device="cuda")
            scales = torch.full((srows * pc,), 0xA5, dtype=torch.uint8, device="cuda")
            run.fused(x, w, packed, scales, S, act, tile)
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
            print(f"check {model} T={T} tile {tile[0]}x{tile[1]}: fused GEMM {dp} of {packed.numel()} packed bytes, {ds} of {scales.numel()} scale "
                  f"bytes differ ({nz} nonzero scale bytes); epilogue kernel alone {ep} / {es} differ; "
                  f"GEMM max |D - fp32 matmul| {gemm_err:.2e}", flush=True)
            bad += dp + ds + ep + es + (0 if gemm_err < 1e-2 else 1)
            del d, x
            run.cache.clear()
        del w
        torch.cuda.empty_cache()
    return bad


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

            fused = lambda t: (lambda: run.fused(x, w, packed, scales, S, act, t))
            twin = lambda t: (lambda: run.dense(x, w, gu, t))
            tune = medians_us(timer, [fused(t) for t in TILES] + [twin(t) for t in TILES], max(5, reps // 2))
            tf_all, tb_all = tune[:len(TILES)], tune[len(TILES):]
            for t, a_, b_ in zip(TILES, tf_all, tb_all):
                print(f"  tune {model} T={T} {t[0]}x{t[1]}: fused {a_:.1f} us, BF16-out {b_:.1f} us ({a_ / b_:.3f}x)", flush=True)
            cf = TILES[min(range(len(TILES)), key=lambda i: tf_all[i])]
            cb = TILES[min(range(len(TILES)), key=lambda i: tb_all[i])]
            contenders = [fused(cf), twin(cf), twin(cb), lambda: (twin(cb)(), sq(gu)), lambda: sq(torch.matmul(x, wt))]
            t_f, t_b, t_bb, t_bs, t_cs = medians_us(timer, contenders, reps)
            timing_probe(timer, zip(("fused", "BF16-out", "fastest BF16-out", "BF16 + sq", "cuBLAS + sq"), contenders),
                         max(5, reps // 3), f"{model} T={T}")
            tflops = 2.0 * T * 2 * I * H / t_f / 1e6
            rows.append((model, T, cf, t_f, tflops, t_b, cb, t_bb, t_bs, t_cs))
            print(f"{model} T={T}: fused {cf} {t_f:.1f} us ({tflops:.0f} TFLOP/s), DSL BF16-out same tile {t_b:.1f} "
                  f"({t_f / t_b:.3f}x), fastest BF16-out {cb} {t_bb:.1f}, + sq {t_bs:.1f} ({t_f / t_bs:.3f}x), "
                  f"cuBLAS + sq {t_cs:.1f} ({t_f / t_cs:.3f}x)", flush=True)
            del x, gu, packed, scales
        del w, wt
        torch.cuda.empty_cache()
    print(f"guard: {timer.calls} timed calls, {timer.short} enqueued in more than {timer.GUARD_US:.0f} us "
          f"(0: every sample is device time only)", flush=True)
    return rows


def table(rows):
    out = ["| model | T | fused tile | fused DSL us (TFLOP/s) | DSL BF16-out, same tile, us | fused / BF16-out | fastest BF16-out tile | "
           "its us | + swiglu_quantize us | fused / (DSL BF16 + sq) | cuBLAS BF16 + swiglu_quantize us | fused / (cuBLAS + sq) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, T, cf, tf, tfl, tb, cb, tbb, tbs, tcs in rows:
        out.append(f"| {m} | {T} | {cf[0]}x{cf[1]} | {tf:.1f} ({tfl:.0f}) | {tb:.1f} | {tf / tb:.3f} | {cb[0]}x{cb[1]} | {tbb:.1f} | "
                   f"{tbs:.1f} | {tf / tbs:.3f} | {tcs:.1f} | {tf / tcs:.3f} |")
    return "\n".join(out)


def main():
    return run_cli(__doc__, compile_only, Runner, check, bench, table, compile_choices=("gemm",))


if __name__ == "__main__":
    sys.exit(main())
