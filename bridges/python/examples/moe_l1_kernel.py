"""The Triton kernel of the MoE L1 example (moe_l1_triton.py): imports Triton and fp4fuse only,
so that it compiles ahead of time without torch or a GPU (tests/bridges/triton/aot_compile.py)."""
import triton
import triton.language as tl

import fp4fuse.triton_ext as f4t


@triton.jit(do_not_specialize=["num_blocks"])  # one compile for every routing
def moe_l1_kernel(x_ptr, w_ptr, block_expert_ptr, block_r0_ptr, offsets_ptr, starts_ptr, S_ptr, out_ptr, scale_ptr,
                  acc_ptr, num_blocks, H, I, FUSED: tl.constexpr, ACT: tl.constexpr, PER_EXPERT_S: tl.constexpr,
                  WRITE_ACC: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP_M: tl.constexpr, ONE_DOT: tl.constexpr):
    # Programs walk GROUP_M blocks (mostly one expert's) down one column of N tiles before moving
    # right, so a weight tile is reused from L2 by the blocks of its expert.
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(I, BN)
    per_group = GROUP_M * n_tiles
    first_m = (pid // per_group) * GROUP_M
    group = tl.minimum(num_blocks - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group
    pid_n = (pid % per_group) // group
    # Padding blocks (expert -1) run no K steps and store nothing (count 0 masks every row); a
    # branch around the loop instead would keep Triton from pipelining it.
    e_id = tl.load(block_expert_ptr + pid_m)
    live = e_id >= 0
    e = tl.maximum(e_id, 0)
    r0 = tl.load(block_r0_ptr + pid_m)
    off = tl.load(offsets_ptr + e)
    count = tl.where(live, tl.load(offsets_ptr + e + 1) - off, 0)
    r = r0 + tl.arange(0, BM)
    rmask = r < count
    rows = (off + r).to(tl.int64)
    n0 = pid_n * BN
    cols = n0 + tl.arange(0, BN)
    cmask = cols < I
    k = tl.arange(0, BK)
    a_ptrs = x_ptr + rows[:, None] * H + k[None, :]
    if ONE_DOT:
        # One [BK, 2BN] weight tile: BN gate rows then the BN up rows of the same columns, so that
        # one wgmma of N = 2BN does both (its accumulator is split in registers afterwards).
        j = tl.arange(0, 2 * BN)
        wrow = tl.where(j < BN, n0 + j, I + n0 + j - BN)
        wmask = (n0 + j % BN) < I
        b_ptrs = w_ptr + e.to(tl.int64) * (2 * I) * H + wrow.to(tl.int64)[None, :] * H + k[:, None]
        acc = tl.zeros([BM, 2 * BN], dtype=tl.float32)
        for _ in range(0, tl.where(live, H // BK, 0)):  # H % BK == 0 (checked by the launcher)
            a = tl.load(a_ptrs, mask=rmask[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=wmask[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK
            b_ptrs += BK
        acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc, [BM, 2, BN]), [0, 2, 1]))
    else:
        g_ptrs = w_ptr + e.to(tl.int64) * (2 * I) * H + cols.to(tl.int64)[None, :] * H + k[:, None]
        u_ptrs = g_ptrs + I.to(tl.int64) * H
        acc_g = tl.zeros([BM, BN], dtype=tl.float32)
        acc_u = tl.zeros([BM, BN], dtype=tl.float32)
        for _ in range(0, tl.where(live, H // BK, 0)):  # H % BK == 0 (checked by the launcher)
            a = tl.load(a_ptrs, mask=rmask[:, None], other=0.0)
            bg = tl.load(g_ptrs, mask=cmask[None, :], other=0.0)
            bu = tl.load(u_ptrs, mask=cmask[None, :], other=0.0)
            acc_g = tl.dot(a, bg, acc_g)
            acc_u = tl.dot(a, bu, acc_u)
            a_ptrs += BK
            g_ptrs += BK
            u_ptrs += BK
    if WRITE_ACC:  # test mode: the fp32 accumulators, [rows, 2I] with split halves
        ap = acc_ptr + rows[:, None] * (2 * I) + cols[None, :]
        m = rmask[:, None] & cmask[None, :]
        tl.store(ap, acc_g, mask=m)
        tl.store(ap + I, acc_u, mask=m)
    if FUSED:
        if PER_EXPERT_S:
            S = tl.load(S_ptr + e)
        else:
            S = tl.load(S_ptr)
        h = f4t.activate(acc_g, acc_u, ACT)
        f4t.store_quantized_grouped(h, S, r0, n0, off, count, tl.load(starts_ptr + e), I, out_ptr, scale_ptr,
                                    f4t.NVFP4_TE_EXACT)
    else:
        op = out_ptr + rows[:, None] * (2 * I) + cols[None, :]
        m = rmask[:, None] & cmask[None, :]
        tl.store(op, acc_g.to(tl.bfloat16), mask=m)
        tl.store(op + I, acc_u.to(tl.bfloat16), mask=m)


# Tile shapes (BM, BN, BK, num_warps, num_stages, ONE_DOT), by tokens per expert; the benchmark's
# --tune times every candidate of a size's class. BM 128 with 3 stages (96 KB of shared memory,
# ~110 registers) lets two CTAs share an SM, so one CTA's epilogue can overlap the other's main loop.
CANDIDATES = {
    "small": ((16, 64, 64, 4, 4, 1), (16, 64, 64, 4, 4, 0)),
    "medium": ((64, 64, 64, 4, 4, 1), (64, 64, 64, 4, 4, 0)),
    "large": ((128, 64, 64, 8, 3, 1), (128, 64, 64, 8, 3, 0), (128, 64, 64, 8, 4, 1), (128, 128, 64, 8, 3, 1),
              (64, 64, 64, 4, 3, 1)),
}


def size_class(routed, E):
    per_expert = routed / E
    return "small" if per_expert <= 24 else "medium" if per_expert <= 96 else "large"


def config(routed, E):
    """The default tile shape for a problem (the first candidate of its class)."""
    return CANDIDATES[size_class(routed, E)][0]


def aot_signature(fused=True, act=0, one_dot=True):
    """Signature, constants and argument attributes for `triton.compile` of the kernel (the CI's
    ahead-of-time test): pointers 16-byte aligned and H, I multiples of 16, as the JIT specializes
    them at a launch on torch tensors (without them Triton neither vectorizes nor pipelines the loads)."""
    sig = {"x_ptr": "*bf16", "w_ptr": "*bf16", "block_expert_ptr": "*i32", "block_r0_ptr": "*i32",
           "offsets_ptr": "*i32", "starts_ptr": "*i32", "S_ptr": "*fp32", "out_ptr": "*u8" if fused else "*bf16",
           "scale_ptr": "*u8", "acc_ptr": "*fp32", "num_blocks": "i32", "H": "i32", "I": "i32"}
    cx = dict(FUSED=fused, ACT=act, PER_EXPERT_S=False, WRITE_ACC=False, BM=128, BN=64, BK=64, GROUP_M=8, ONE_DOT=one_dot)
    for c in cx:
        sig[c] = "constexpr"
    names = list(sig)
    aligned = [i for i, n in enumerate(names) if n.endswith("_ptr") or n in ("H", "I")]
    return sig, cx, {(i,): [["tt.divisibility", 16]] for i in aligned}
