#!/usr/bin/env python3
"""The MoE L1 of one expert (moe_l1_cute_dsl.py's problem) as a CuTe DSL Blackwell (sm_100a) GEMM:
TMA loads, tcgen05 MMA (UMMA) accumulating in tensor memory, and an epilogue that reads rows from
tensor memory and quantizes them through the bridge, which on sm_100a links fp4fuse_sm100a.bc
(hardware `cvt.rn.satfinite.e2m1x2`).

    D[T, 2I] = X[T, H] x W[2I, H]^T, W's gate/up rows interleaved by 8 (rows 16j..16j+7 gate,
    16j+8..16j+15 up of outputs 8j..8j+7); out = NVFP4(act(gate) * up): packed E2M1 [T, I/2] and
    E4M3 block scales in scale_layout::swizzled_128x4 (padding bytes 0x00), S the global scale,
    recipe te_exact.

STATUS: compiled for sm_100a without a GPU (bridges/tests/test_moe_l1_cute_dsl_compile.py checks
the PTX), NEVER RUN: no Blackwell GPU was available. --check and --bench are written (they reuse
moe_l1_cute_dsl.py's host side) but have not been executed; treat any result as unverified until
--check passes on a B200/GB200.

The GEMM, kept as simple as correctness allows (written for this example after the DSL's
Blackwell dense GEMM example, examples/python/CuTeDSL/cute/blackwell/kernel/dense_gemm/dense_gemm.py
in NVIDIA/cutlass, checked against nvidia-cutlass-dsl 4.8.1's API):

- one CTA of 128 threads (4 warps) per 128 x 256 output tile, no cluster, no 2-SM (cta_group::1)
  MMA, no TMA multicast, not persistent;
- warp 0 issues the TMA loads (A and B, 64-deep k-tiles, a PipelineTmaUmma of as many stages as
  shared memory holds) and the tcgen05 MMAs (128 x 256 x 16 instructions, the fp32 accumulator in
  256 tensor-memory columns); the MMA's completion is signalled to all 128 threads through a
  PipelineUmmaAsync barrier;
- the epilogue, all 4 warps: the 128 x 256 accumulator in 8 pieces of 128 x 32 read with
  `tcgen05.ld.32x32b.x32`: warp w reads tensor-memory lanes 32w..32w+31, so thread t holds row t's
  32 consecutive columns in registers, which is exactly one NVFP4 block of 16 outputs (32
  interleaved gate/up columns) for the row form `fp4fuse_row_<act>_nvfp4_te_exact_i8_o16`. No
  shared-memory staging (the Hopper examples need it to regroup wgmma fragments into rows).

Outputs: `fp32` / `bf16` write D with plain per-thread stores (no TMA store; a reference and the
unfused benchmark's GEMM, not tuned), `nvfp4` the fused SwiGLU -> NVFP4 epilogue. All three use
the same row/column mapping of the tensor-memory load, so --check's comparison of the fp32 D
against torch's matmul also checks the mapping the fused epilogue relies on. Accumulators are not
rounded on either side (intermediate::fp32), as in the Hopper examples.

    python moe_l1_cute_dsl_sm100.py LIBREF.so --check [--sizes 64,200,512,4096]   # Blackwell GPU
    python moe_l1_cute_dsl_sm100.py LIBREF.so --bench [--sizes 64,512,4096,16384]
    CUTE_DSL_ARCH=sm_100a python moe_l1_cute_dsl_sm100.py --compile-only gemm     # no GPU

LIBREF.so: moe_l1_cute_dsl_ref.cu built with nvcc for the Blackwell GPU (e.g. -arch=sm_100a).
Any other compile target (sm_90a included) fails with a sentence before code generation: tcgen05
exists on the sm_100 family only (moe_l1_cute_dsl_pingpong.py is the Hopper example).
"""
import json
import re
import sys
import time

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import Float32, Int32, Uint8, Uint32
from cutlass._mlir.dialects import nvvm
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.pipeline import pipeline_init_arrive, pipeline_init_wait

# the host side shared with the Hopper example: models, the nvcc reference, the check and the benchmark
import moe_l1_cute_dsl as hopper
from moe_l1_cute_dsl import ptx_facts, quantize_store

try:  # nvidia-cutlass-dsl 4.8 moved it (utils.TmemAllocator is a deprecated alias there)
    from cutlass.memory import TmemAllocator
except ImportError:  # pragma: no cover
    from cutlass.utils import TmemAllocator

TILE_M, TILE_N, TILE_K = 128, 256, 64
EPI_N = 32  # columns of one tensor-memory load: one NVFP4 block of 16 outputs (32 interleaved gate/up columns)
THREADS = 128  # 4 warps: one per 32 tensor-memory lanes (tcgen05.ld lets warp w % 4 reach lanes 32(w%4)..+31)
TCGEN05_ARCHS = ("sm_100a", "sm_100f", "sm_103a", "sm_103f")


def require_tcgen05(what):
    """Fails with a sentence (before any code generation, so never as a ptxas error) when the
    kernel's compile target has no tcgen05."""
    from cutlass.base_dsl import BaseDSL

    arch = str(BaseDSL._get_dsl().get_arch_enum())
    if arch not in TCGEN05_ARCHS:
        raise RuntimeError(
            f"moe_l1_cute_dsl_sm100: {what} uses tcgen05 MMA and tensor memory, which the compile target {arch} "
            f"does not have (the sm_100 family only: {', '.join(TCGEN05_ARCHS)}); compile for sm_100a "
            f"(CUTE_DSL_ARCH=sm_100a or a Blackwell GPU), or use moe_l1_cute_dsl_pingpong.py on sm_90a")


class MoeL1GemmSm100:
    """TMA + tcgen05 GEMM; `out` = "fp32", "bf16" (D stored) or "nvfp4" (the fused SwiGLU -> NVFP4
    epilogue with activation `act`)."""

    def __init__(self, out, act="swiglu"):
        hopper.set_output(self, out, act, (TILE_M, TILE_N))
        self.mma_tiler = (TILE_M, TILE_N, TILE_K)

    def _setup(self, a, b):
        require_tcgen05(f"MoeL1GemmSm100({self.out!r})")
        a_major = utils.LayoutEnum.from_tensor(a).mma_major_mode()
        b_major = utils.LayoutEnum.from_tensor(b).mma_major_mode()
        self.tiled_mma = sm100_utils.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, a_major, b_major, self.acc_dtype, tcgen05.CtaGroup.ONE, (TILE_M, TILE_N))
        # 64-deep k-tiles: 4 instructions of K = 16 (bf16) per stage, as the DSL example
        if cute.size(self.tiled_mma.shape_mnk, mode=[2]) * 4 != TILE_K:
            raise RuntimeError("MoeL1GemmSm100: the bf16 tcgen05 MMA is expected to be 16 deep")
        one_a = sm100_utils.make_smem_layout_a(self.tiled_mma, self.mma_tiler, self.ab_dtype, 1)
        one_b = sm100_utils.make_smem_layout_b(self.tiled_mma, self.mma_tiler, self.ab_dtype, 1)
        stage_bytes = cute.size_in_bytes(self.ab_dtype, one_a) + cute.size_in_bytes(self.ab_dtype, one_b)
        # everything but 1 KB of barriers and the tensor-memory address goes to the A/B stages
        self.ab_stage = (utils.get_smem_capacity_in_bytes("sm_100") - 1024) // stage_bytes
        self.a_smem = sm100_utils.make_smem_layout_a(self.tiled_mma, self.mma_tiler, self.ab_dtype, self.ab_stage)
        self.b_smem = sm100_utils.make_smem_layout_b(self.tiled_mma, self.mma_tiler, self.ab_dtype, self.ab_stage)
        cluster_vmnk = (1, 1, 1, 1)
        tma_op = sm100_utils.cluster_shape_to_tma_atom_A((1, 1, 1), self.tiled_mma.thr_id)  # no cluster: no multicast
        tma_a, ta = cute.nvgpu.make_tiled_tma_atom_A(tma_op, a,
                                                     cute.slice_(self.a_smem, (None, None, None, 0)), self.mma_tiler,
                                                     self.tiled_mma, cluster_vmnk)
        tma_b, tb = cute.nvgpu.make_tiled_tma_atom_B(tma_op, b,
                                                     cute.slice_(self.b_smem, (None, None, None, 0)), self.mma_tiler,
                                                     self.tiled_mma, cluster_vmnk)
        self.tx_bytes = stage_bytes
        acc_fake = self.tiled_mma.make_fragment_C(self.tiled_mma.partition_shape_C((TILE_M, TILE_N)))
        self.tmem_cols = utils.get_num_tmem_alloc_cols(acc_fake)
        return tma_a, ta, tma_b, tb

    @cute.jit
    def dense(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        """D = a x b^T into c ([M, N], fp32 or bf16, row-major)."""
        tma_a, ta, tma_b, tb = self._setup(a, b)
        self._launch(tma_a, ta, tma_b, tb, c, c, c, Float32(1.0), a.shape[0], b.shape[0], stream)

    @cute.jit
    def fused(self, a: cute.Tensor, b: cute.Tensor, packed: cute.Tensor, scales: cute.Tensor, S: Float32, stream):
        """NVFP4(act(gate) * up) of D = a x b^T: packed [M, I/8] 32-bit words (8 E2M1 each), scales
        [round_up(M, 128) * round_up(I/16, 4)] bytes in the swizzled 128x4 layout; S the global scale."""
        tma_a, ta, tma_b, tb = self._setup(a, b)
        # no D here: `packed` stands in for the unused D parameter
        self._launch(tma_a, ta, tma_b, tb, packed, packed, scales, S, a.shape[0], b.shape[0], stream)

    @cute.jit
    def _launch(self, tma_a, ta, tma_b, tb, c, packed, scales, S, M, N, stream):
        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, self.ab_stage * 2]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2]
            tmem_addr: Int32
            sA: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.a_smem.outer)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.b_smem.outer)], 1024]

        self.storage = Storage
        grid = (cute.ceil_div(M, TILE_M), cute.ceil_div(N, TILE_N), 1)
        self.kernel(self.tiled_mma, tma_a, ta, tma_b, tb, c, packed, scales, S, M, N, self.a_smem, self.b_smem).launch(
            grid=grid, block=[THREADS, 1, 1], cluster=(1, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom,
               mB: cute.Tensor, mC: cute.Tensor, mPacked: cute.Tensor, mScales: cute.Tensor, S: Float32, M: Int32,
               N: Int32, a_smem: cute.ComposedLayout, b_smem: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)

        storage = utils.SmemAllocator().allocate(self.storage)
        cta_vmnk = cute.make_layout((1, 1, 1, 1))
        # A/B stages: TMA (one producer thread, tx-count barriers) -> UMMA (its commit frees a stage)
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(), num_stages=self.ab_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=self.tx_bytes, cta_layout_vmnk=cta_vmnk, defer_sync=True).make_participants()
        # the accumulator: the last UMMA's commit -> all 128 epilogue threads
        acc_pipe = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(), num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
            cta_layout_vmnk=cta_vmnk, defer_sync=True)
        acc_prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        acc_cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        tmem = TmemAllocator(storage.tmem_addr.ptr, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS))
        pipeline_init_arrive(cluster_shape_mn=cta_vmnk, is_relaxed=True)

        sA = storage.sA.get_tensor(a_smem.outer, swizzle=a_smem.inner)  # (MMA, MMA_M, MMA_K, STAGE)
        sB = storage.sB.get_tensor(b_smem.outer, swizzle=b_smem.inner)  # (MMA, MMA_N, MMA_K, STAGE)
        gA = cute.local_tile(mA, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None, None))  # (bM, bK, RestM, RestK, RestL)
        gB = cute.local_tile(mB, cute.slice_(self.mma_tiler, (0, None, None)), (None, None, None))  # (bN, bK, RestN, RestK, RestL)
        k_tiles = cute.size(gA, mode=[3])
        thr_mma = tiled_mma.get_slice(0)
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3),
                                           cute.group_modes(thr_mma.partition_A(gA), 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3),
                                           cute.group_modes(thr_mma.partition_B(gB), 0, 3))
        tAgA = tAgA[(None, bm, None, 0)]  # ((atom_v, rest_v), RestK)
        tBgB = tBgB[(None, bn, None, 0)]
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_fake = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((TILE_M, TILE_N)))

        pipeline_init_wait(cluster_shape_mn=cta_vmnk)
        tmem.allocate(self.tmem_cols)
        tmem.wait_for_alloc()
        tmem_ptr = tmem.retrieve_ptr(self.acc_dtype)
        tCtAcc = cute.make_tensor(tmem_ptr, acc_fake.layout)  # (MMA, MMA_M, MMA_N) in tensor memory

        if warp == 0:
            # ---- TMA + MMA, one warp: loads run `ahead` k-tiles in front of the MMAs. Two stages
            # stay out of the lead (the DSL example's choice) so that acquiring a stage waits on an
            # MMA two k-tiles back, not on the one just issued. ----
            ahead = cutlass.min(self.ab_stage - 2, k_tiles)
            for k in cutlass.range(ahead, unroll=1):
                h = ab_producer.acquire_and_advance()
                cute.copy(tma_a, tAgA[(None, k)], tAsA[(None, h.index)], tma_bar_ptr=h.barrier)
                cute.copy(tma_b, tBgB[(None, k)], tBsB[(None, h.index)], tma_bar_ptr=h.barrier)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
            kblocks = cute.size(tCrA, mode=[2])
            for k in cutlass.range(k_tiles, unroll=1):
                if k < k_tiles - ahead:
                    h = ab_producer.acquire_and_advance()
                    cute.copy(tma_a, tAgA[(None, h.count)], tAsA[(None, h.index)], tma_bar_ptr=h.barrier)
                    cute.copy(tma_b, tBgB[(None, h.count)], tBsB[(None, h.index)], tma_bar_ptr=h.barrier)
                c = ab_consumer.wait_and_advance()
                for kb in cutlass.range(kblocks, unroll_full=True):
                    cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, kb, c.index)], tCrB[(None, None, kb, c.index)], tCtAcc)
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                c.release()  # tcgen05.commit: the stage is free once these MMAs have read it
            acc_pipe.producer_commit(acc_prod)  # tcgen05.commit: the accumulator is complete

        tmem.relinquish_alloc_permit()
        acc_pipe.consumer_wait(acc_cons)
        # the PTX memory model's pattern for tcgen05 work handed between threads by a barrier:
        # after_thread_sync on the waiting side orders this thread's tcgen05.ld after the MMAs
        # (tcgen05.commit carries the matching before_thread_sync); the DSL's pipeline emits neither
        _tcgen05_fence(after=True)

        # ---- epilogue: tensor memory -> registers, 128 x 32 at a time (tcgen05.ld 32x32b x32) ----
        t2r_atom = cute.make_copy_atom(tcgen05.copy.Ld32x32bOp(tcgen05.copy.Repetition.x32), self.acc_dtype)
        tAcc_epi = cute.flat_divide(tCtAcc[((None, None), 0, 0)], (TILE_M, EPI_N))  # (128, 32, 1, 8)
        t2r = tcgen05.make_tmem_copy(t2r_atom, tAcc_epi[(None, None, 0, 0)])
        thr_t2r = t2r.get_slice(tidx)
        tTR_tAcc = thr_t2r.partition_S(tAcc_epi)  # (T2R, T2R_M, T2R_N, 1, 8)
        tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
        tTR_cC = thr_t2r.partition_D(cute.make_identity_tensor((TILE_M, EPI_N)))
        vals = cute.make_rmem_tensor(tTR_cC.shape, self.acc_dtype)
        # 32x32b: thread t of the 4 warps holds tensor-memory lane (= accumulator row) t, register j
        # column j of the piece. Checked at trace time on the DSL's own partition (below); --check's
        # fp32 D, stored with this same mapping, is also compared with torch's matmul.
        _check_row_mapping(t2r)
        m = bm * TILE_M + tidx
        if cutlass.const_expr(not self.is_fused):
            out_r = cute.make_rmem_tensor(tTR_cC.shape, self.c_dtype)
            for e in cutlass.range_constexpr(TILE_N // EPI_N):
                cute.copy(t2r, tTR_tAcc[(None, None, None, e)], vals)
                cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld: the registers hold the values from here on
                out_r.store(vals.load().to(self.c_dtype))
                n0 = bn * TILE_N + e * EPI_N
                if m < M and n0 < N:  # N is a multiple of 32: a piece is wholly in or out
                    for j in cutlass.range_constexpr(EPI_N):
                        mC[m, n0 + j] = out_r[j]
        else:
            pk = cute.make_rmem_tensor(cute.make_layout(2), Uint32)
            sc = cute.make_rmem_tensor(cute.make_layout(1), Uint8)
            am = cute.make_rmem_tensor(cute.make_layout(1), Float32)
            n_blocks = N // 32  # output blocks of 16 (I / 16)
            padded_blocks = (n_blocks + 3) // 4 * 4
            for e in cutlass.range_constexpr(TILE_N // EPI_N):
                cute.copy(t2r, tTR_tAcc[(None, None, None, e)], vals)
                cute.arch.fence_view_async_tmem_load()  # tcgen05.wait::ld: the registers hold the values from here on
                quantize_store(self.act, vals, pk, sc, am, S, mPacked, mScales, m, bn * (TILE_N // EPI_N) + e, M,
                               n_blocks, padded_blocks)

        # every thread's tensor-memory loads are done (tcgen05.wait::ld above) before the columns are freed
        _tcgen05_fence(after=False)
        pipeline.NamedBarrier(barrier_id=2, num_threads=THREADS).arrive_and_wait()
        _tcgen05_fence(after=True)
        tmem.free(tmem_ptr)
        if warp == 0:
            ab_producer.tail()


def _tcgen05_fence(after):
    """tcgen05.fence::after_thread_sync (after=True) or ::before_thread_sync."""
    nvvm.tcgen05_fence(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC if after else nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)


def _check_row_mapping(t2r):
    """Trace-time proof of the mapping the epilogue relies on (one row's consecutive columns per
    thread, what the row form takes): the DSL's partition of a (128, 32) coordinate tensor by the
    32x32b.x32 tiled copy gives thread t the coordinates (t, 0..31) in register order. A DSL
    version that partitions otherwise fails here with a sentence, not with wrong bytes."""
    for t in (0, 1, 31, 32, 63, 64, 96, 127):
        got = str(t2r.get_slice(t).partition_D(cute.make_identity_tensor((TILE_M, EPI_N))))
        want = f"tensor<({t},0) o ((32,1),1,1):((1@1,0),0,0)>"
        if got != want:
            raise RuntimeError(f"moe_l1_cute_dsl_sm100: the tcgen05.ld 32x32b.x32 partition gives thread {t} the "
                               f"coordinates {got}, not row {t}'s 32 consecutive columns ({want}); the fused epilogue "
                               f"assumes the latter (tested with nvidia-cutlass-dsl 4.8.1)")


# ---- compile without a GPU (the CI test) -----------------------------------------------------------
def ptx_facts_sm100(ptx):
    f = ptx_facts(ptx)
    f.update(tcgen05_mma=len(re.findall(r"tcgen05\.mma\.", ptx)),
             tcgen05_ld=len(re.findall(r"tcgen05\.ld\.\S*32x32b", ptx)),
             tcgen05_alloc=len(re.findall(r"tcgen05\.alloc\.", ptx)),
             tcgen05_commit=len(re.findall(r"tcgen05\.commit\.", ptx)),
             tcgen05_wait_ld=len(re.findall(r"tcgen05\.wait::ld", ptx)),
             tcgen05_fence=len(re.findall(r"tcgen05\.fence::", ptx)),
             local_any=len(re.findall(r"\.local\b", ptx)))  # any local-memory declaration or access
    return f


def compile_only(which):
    """Compiles for CUTE_DSL_ARCH (fake tensors) and prints one JSON line of PTX facts per kernel:
    which = "gemm" (fp32, bf16 and nvfp4 GEMMs)."""
    ops = hopper.fake_operands()
    out = {}
    for name in ("fp32", "bf16", "nvfp4"):
        t0 = time.time()
        c = hopper.compile_gemm(MoeL1GemmSm100(name, "swiglu_clamped" if name == "nvfp4" else "swiglu"), ops, extra=(), c_rank=2)
        out[name] = dict(ptx_facts_sm100(c.__ptx__), seconds=round(time.time() - t0, 1))
    print(json.dumps(out), flush=True)


# ---- the GPU side: moe_l1_cute_dsl.py's check and benchmark with these kernels ------------------------
class Runner(hopper.Runner):
    """moe_l1_cute_dsl.Runner (argument checks, tensor cache, the epilogue kernel) launching the
    tcgen05 GEMMs."""

    name = "moe_l1_cute_dsl_sm100"

    def dense(self, x, w, c):
        """c[T, 2I] (float32 or bfloat16) = x w^T."""
        self.check_args(x, w)
        if c.dtype not in (self.torch.float32, self.torch.bfloat16) or tuple(c.shape) != (x.shape[0], w.shape[0]) \
                or not c.is_contiguous():
            raise ValueError(f"moe_l1_cute_dsl_sm100: c must be a contiguous float32 or bfloat16 [T, 2I] = "
                             f"[{x.shape[0]}, {w.shape[0]}]")
        out = "fp32" if c.dtype == self.torch.float32 else "bf16"
        a, b, cc = self._t(self.mnl(x), 1), self._t(self.mnl(w), 1), self._t(c, 1)
        fn = self.compiled_kernel(out, f"sm100 {out} GEMM", lambda: cute.compile(MoeL1GemmSm100(out).dense, a, b, cc, self.stream))
        fn(a, b, cc, self.stream)

    def fused(self, x, w, packed, scales, S, act):
        """packed [T, I/2] uint8, scales [round_up(T,128) * round_up(I/16,4)] uint8, S a Python float."""
        a, b, pk, sc = self.fused_tensors(x, w, packed, scales)
        fn = self.compiled_kernel(("nvfp4", act), f"sm100 fused {act} GEMM", lambda: cute.compile(
            MoeL1GemmSm100("nvfp4", act).fused, a, b, pk, sc, Float32(S), self.stream))
        fn(a, b, pk, sc, Float32(S), self.stream)


def main():
    return hopper.run_cli(__doc__, compile_only, Runner, hopper.check, hopper.bench, hopper.table, compile_choices=("gemm",))


if __name__ == "__main__":
    sys.exit(main())
