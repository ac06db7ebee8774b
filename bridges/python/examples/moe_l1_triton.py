#!/usr/bin/env python3
"""The MoE L1 (hidden -> gate|up -> SwiGLU -> NVFP4) over all experts in one Triton launch, in the
manner of vLLM's fused_moe kernel: tokens sorted by expert, each expert's rows cut into blocks of
BM rows (the last one padded), one expert id per block; every program computes a [BM, BN] tile of
gate and of up (two accumulators, W in nn.Linear layout [E, 2I, H] with the gate rows first) and its
epilogue writes NVFP4 through fp4fuse.triton_ext in the library's grouped scale layout
(scale_layout::grouped_swizzled_128x4, either expert-start convention). FUSED=False is the same
kernel writing the BF16 gate/up instead (the unfused pipeline's GEMM).

    python moe_l1_triton.py --check LIBREF.so      # bits vs fp4fuse::swiglu_quantize on the accumulators
    python moe_l1_triton.py --bench LIBREF.so [--sizes 64,512,4096,32768] [--out table.md]

LIBREF.so: tests/bridges/triton/reference.cu built with nvcc (the C++ library's swiglu_quantize).
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch
import triton

import fp4fuse.triton_ext as f4t
from moe_l1_kernel import CANDIDATES, config, moe_l1_kernel, size_class

MODELS = {  # name: (hidden H, intermediate I, experts E, top-k, activation)
    "DeepSeek-V3": (7168, 2048, 256, 8, 0),
    "GPT-OSS-120B": (2880, 2880, 128, 4, 2),
}


class Routing:
    """Tokens sorted by expert: counts [E], offsets [E+1], the blocks of BM rows (expert id and
    first row within the expert, padded with expert -1 to a data-independent bound), and each
    expert's first scale row under the layout's convention."""

    def __init__(self, counts, BM, convention="offset_bound"):
        dev = counts.device
        E = counts.numel()
        self.E, self.BM = E, BM
        self.offsets = torch.zeros(E + 1, dtype=torch.int32, device=dev)
        self.offsets[1:] = torch.cumsum(counts, 0).to(torch.int32)
        self.routed = int(self.offsets[-1])
        nb = (counts + BM - 1) // BM
        self.num_blocks = self.routed // BM + E  # bound: sum ceil(c / BM) <= routed / BM + E
        expert = torch.repeat_interleave(torch.arange(E, device=dev, dtype=torch.int32), nb)
        first = torch.cumsum(nb, 0) - nb
        r0 = (torch.arange(expert.numel(), device=dev) - first[expert.long()]) * BM
        self.block_expert = torch.full((self.num_blocks,), -1, dtype=torch.int32, device=dev)
        self.block_r0 = torch.zeros(self.num_blocks, dtype=torch.int32, device=dev)
        self.block_expert[:expert.numel()] = expert
        self.block_r0[:expert.numel()] = r0.to(torch.int32)
        banded = (counts + 127) // 128 * 128
        if convention == "padded_prefix_sum":
            starts = torch.cumsum(banded, 0) - banded
        else:
            starts = (self.offsets[:-1].long() + 127 * torch.arange(E, device=dev) + 127) // 128 * 128
        self.starts = starts.to(torch.int32)
        self.counts = counts


def scale_rows(routed, E):
    """Rows of the grouped scale tensor: round_up(rows + 127 E, 128) (either convention)."""
    return (routed + 127 * E + 127) // 128 * 128


def launch(x, w, rt, S, out, scales, I, act, fused, per_expert_s=False, acc=None, cfg=None):
    """One launch of the kernel over all experts. fused: out = packed [rows, I/2] uint8 and scales
    (cleared first: the grouped layout's gaps, tail and uncovered band rows are 0x00); else out =
    BF16 [rows, 2I]."""
    H = x.shape[1]
    BM, BN, BK, warps, stages, one_dot = cfg
    E = w.shape[0]
    need = [
        (x.dtype == torch.bfloat16 and x.is_contiguous() and x.dim() == 2, f"x must be a contiguous bfloat16 [rows, H], got {x.dtype} {tuple(x.shape)}"),
        (w.dtype == torch.bfloat16 and w.is_contiguous() and tuple(w.shape[1:]) == (2 * I, H),
         f"w must be a contiguous bfloat16 [E, 2I, H] = [E, {2 * I}, {H}], got {w.dtype} {tuple(w.shape)}"),
        (H % BK == 0 and I % 16 == 0, f"H = {H} must be a multiple of BK = {BK} and I = {I} of 16"),
        (rt.BM == BM and rt.E >= E and rt.routed <= x.shape[0], f"the routing must be cut in blocks of BM = {BM} rows (is {rt.BM}), over at most x's {x.shape[0]} rows (routes {rt.routed})"),
        (S.dtype == torch.float32 and S.numel() >= (rt.E if per_expert_s else 1), "S must hold one float32 (or one per expert with per_expert_s)"),
    ]
    if fused:
        need += [(out.dtype == torch.uint8 and out.numel() >= x.shape[0] * I // 2, f"out must be uint8 packed [rows, I/2] = {x.shape[0] * I // 2} bytes"),
                 (scales is not None and scales.dtype == torch.uint8 and scales.numel() >= scale_rows(x.shape[0], rt.E) * ((I // 16 + 3) // 4 * 4),
                  "scales must be uint8 of scale_rows(rows, E) * round_up(I/16, 4) bytes (the grouped 128x4 layout)")]
    else:
        need += [(out.dtype == torch.bfloat16 and out.numel() >= x.shape[0] * 2 * I, f"out must be bfloat16 [rows, 2I] = [{x.shape[0]}, {2 * I}]")]
    if acc is not None:
        need += [(acc.dtype == torch.float32 and acc.numel() >= x.shape[0] * 2 * I, "acc must be float32 [rows, 2I]")]
    for ok, why in need:
        if not ok:
            raise ValueError(f"moe_l1: {why}")
    if fused:
        scales.zero_()
    grid = (rt.num_blocks * triton.cdiv(I, BN),)
    moe_l1_kernel[grid](x, w, rt.block_expert, rt.block_r0, rt.offsets, rt.starts, S, out,
                        scales if scales is not None else S, acc if acc is not None else S, rt.num_blocks, H, I,
                        FUSED=fused, ACT=act, PER_EXPERT_S=per_expert_s, WRITE_ACC=acc is not None, BM=BM, BN=BN,
                        BK=BK, GROUP_M=8, ONE_DOT=bool(one_dot), num_warps=warps, num_stages=stages, extern_libs=f4t.extern_libs())


def route(T, E, k, gen):
    """Uniform top-k routing: each token picks k distinct experts; returns counts [E] int64."""
    picks = torch.rand(T, E, device="cuda", generator=gen).topk(k, dim=1).indices
    return torch.bincount(picks.flatten(), minlength=E)


class Reference:
    """The C++ library's swiglu_quantize (libfp4fuse_triton_ref.so)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def swiglu_quantize(self, gu, dtype, M, I, act, S_ptr, packed_ptr, scales_ptr):
        err = ctypes.create_string_buffer(512)
        rc = self.lib.fp4fuse_ref_swiglu_quantize(ctypes.c_void_p(gu), dtype, M, I, 1, act, 0, 1, ctypes.c_void_p(S_ptr),
                                                  ctypes.c_void_p(0), ctypes.c_void_p(packed_ptr),
                                                  ctypes.c_void_p(scales_ptr), ctypes.c_void_p(0), err)
        if rc:
            raise RuntimeError(err.value.decode())


def check(ref, seed, shard=0, shards=1):
    # Memory: DeepSeek-V3's W is 15 GB; run at most 2-3 check processes at once on one GPU.
    """Fused output vs the library on the kernel's own fp32 accumulators, every byte (cases
    shard, shard + shards, ...: parallel processes share the compile time)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    bad = 0
    # Every tile shape of `config` (BM 16, 64, 128), both expert-start conventions, S per tensor and per expert.
    C = CANDIDATES
    cases = [("DeepSeek-V3", 64, "offset_bound", False, C["small"][0]),
             ("DeepSeek-V3", 1024, "padded_prefix_sum", False, C["medium"][1]),
             ("DeepSeek-V3", 4096, "offset_bound", True, C["large"][0]),
             ("DeepSeek-V3", 4096, "padded_prefix_sum", False, C["large"][1]),
             ("GPT-OSS-120B", 200, "padded_prefix_sum", True, C["small"][1]),
             ("GPT-OSS-120B", 1024, "offset_bound", False, C["medium"][0]),
             ("GPT-OSS-120B", 4096, "offset_bound", False, C["large"][3]),
             ("GPT-OSS-120B", 4096, "padded_prefix_sum", True, C["large"][4])]
    weights = {}
    for model, T, convention, per_expert, cfg in cases[shard::shards]:
        H, I, E, k, act = MODELS[model]
        if model not in weights:
            weights.clear()
            weights[model] = torch.randn(E, 2 * I, H, device="cuda", dtype=torch.bfloat16, generator=gen).mul_(H ** -0.5)
        w = weights[model]
        counts = route(T, E, k, gen)
        routed = T * k
        x = torch.randn(routed, H, device="cuda", dtype=torch.bfloat16, generator=gen)
        rt = Routing(counts, cfg[0], convention)
        S = torch.exp(torch.randn(E if per_expert else 1, device="cuda", generator=gen)) * 400
        pc = (I // 16 + 3) // 4 * 4
        srows = scale_rows(routed, E)
        packed = torch.full((routed, I // 2), 0xA5, dtype=torch.uint8, device="cuda")
        scales = torch.full((srows * pc,), 0xA5, dtype=torch.uint8, device="cuda")
        acc = torch.empty(routed, 2 * I, device="cuda", dtype=torch.float32)
        launch(x, w, rt, S, packed, scales, I, act, True, per_expert, acc, cfg)
        ref_p = torch.full_like(packed, 0x5A)
        ref_s = torch.zeros_like(scales)
        offs = rt.offsets.tolist()
        starts = rt.starts.tolist()
        for e in range(E):
            c = offs[e + 1] - offs[e]
            if c:
                ref.swiglu_quantize(acc.data_ptr() + offs[e] * 2 * I * 4, 0, c, I, act,
                                    S.data_ptr() + (4 * e if per_expert else 0), ref_p.data_ptr() + offs[e] * I // 2,
                                    ref_s.data_ptr() + starts[e] * pc)
        torch.cuda.synchronize()
        dp, ds = int((packed != ref_p).sum()), int((scales != ref_s).sum())
        print(f"check {model} T={T} ({routed} rows, {convention}, S per {'expert' if per_expert else 'tensor'}, "
              f"tile {cfg}): {dp} of {packed.numel()} packed bytes, {ds} of {scales.numel()} scale bytes differ",
              flush=True)
        bad += dp + ds
    return bad


def warm(shard, shards, sizes):
    """Compiles the benchmark's kernels (shard i of n: run the shards in parallel processes, they
    share Triton's cache): each model's fused and BF16 kernels for every tile shape the sizes use,
    launched on 16 rows of expert 0 (so that W needs only that expert)."""
    jobs = []
    for model, (H, I, E, k, act) in MODELS.items():
        for cfg in sorted({c for T in sizes for c in CANDIDATES[size_class(T * k, E)]}):
            for fused in (True, False):
                jobs.append((model, cfg, fused))
    for model, cfg, fused in jobs[shard::shards]:
        H, I, E, k, act = MODELS[model]
        counts = torch.zeros(E, dtype=torch.int64, device="cuda")
        counts[0] = 16
        rt = Routing(counts, cfg[0])
        w = torch.randn(1, 2 * I, H, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(16, H, device="cuda", dtype=torch.bfloat16)
        S = torch.ones(1, device="cuda")
        t0 = time.time()
        if fused:
            launch(x, w, rt, S, torch.empty(16, I // 2, dtype=torch.uint8, device="cuda"),
                   torch.empty(scale_rows(16, E) * ((I // 16 + 3) // 4 * 4), dtype=torch.uint8, device="cuda"), I, act,
                   True, cfg=cfg)
        else:
            launch(x, w, rt, S, torch.empty(16, 2 * I, dtype=torch.bfloat16, device="cuda"), None, I, act, False, cfg=cfg)
        torch.cuda.synchronize()
        print(f"warm {model} {cfg} {'fused' if fused else 'bf16'}: {time.time() - t0:.1f} s", flush=True)


def medians_us(fns, reps, flush):
    """Median time of each function, measured in interleaved rounds (one launch of each per round,
    the L2 flushed before each), after two warm-up rounds: drift hits every function alike."""
    for _ in range(2):
        for fn in fns:
            fn()
    torch.cuda.synchronize()
    ts = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            flush()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts[i].append(s.elapsed_time(e) * 1000)
    return [statistics.median(t) for t in ts]


def bench(ref, sizes, reps, seed):
    """Per model and T: every candidate tile shape of the size's class, fused and BF16 twin; then,
    in one interleaved set of rounds, the fastest fused kernel, its twin (same tile shape), the
    fastest twin followed by fp4fuse::swiglu_quantize, and torch._grouped_mm followed by it."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    flush_buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def flush():  # the inputs leave L2 before every timed launch
        flush_buf.view(torch.int64).sum()

    rows = []
    for model, (H, I, E, k, act) in MODELS.items():
        w = torch.randn(E, 2 * I, H, device="cuda", dtype=torch.bfloat16, generator=gen).mul_(H ** -0.5)
        wt = w.transpose(-2, -1)
        for T in sizes:
            routed = T * k
            counts = route(T, E, k, gen)
            x = torch.randn(routed, H, device="cuda", dtype=torch.bfloat16, generator=gen)
            cands = CANDIDATES[size_class(routed, E)]
            rts = {c[0]: Routing(counts, c[0]) for c in cands}
            S = torch.tensor([2688.0 / 4.0], device="cuda")
            pc = (I // 16 + 3) // 4 * 4
            packed = torch.empty(routed, I // 2, dtype=torch.uint8, device="cuda")
            scales = torch.empty(scale_rows(routed, E) * pc, dtype=torch.uint8, device="cuda")
            gu = torch.empty(routed, 2 * I, dtype=torch.bfloat16, device="cuda")
            dense_scales = torch.empty((routed + 127) // 128 * 128 * pc, dtype=torch.uint8, device="cuda")
            offs = rts[cands[0][0]].offsets[1:]

            def fused(c):
                return lambda: launch(x, w, rts[c[0]], S, packed, scales, I, act, True, cfg=c)

            def twin(c):
                return lambda: launch(x, w, rts[c[0]], S, gu, None, I, act, False, cfg=c)

            def sq(src):
                ref.swiglu_quantize(src.data_ptr(), 1, routed, I, act, S.data_ptr(), packed.data_ptr(),
                                    dense_scales.data_ptr())

            tune = medians_us([fused(c) for c in cands] + [twin(c) for c in cands], max(5, reps // 2), flush)
            tf_all, tt_all = tune[:len(cands)], tune[len(cands):]
            for c, a_, b_ in zip(cands, tf_all, tt_all):
                print(f"  tune {model} T={T} {c}: fused {a_:.1f} us, twin {b_:.1f} us ({a_ / b_:.3f}x)", flush=True)
            cf = cands[min(range(len(cands)), key=lambda i: tf_all[i])]
            ct = cands[min(range(len(cands)), key=lambda i: tt_all[i])]
            t_f, t_t, t_ts, t_g = medians_us(
                [fused(cf), twin(cf), lambda: (twin(ct)(), sq(gu)), lambda: sq(torch._grouped_mm(x, wt, offs=offs))],
                reps, flush)
            flops = 2.0 * routed * 2 * I * H
            row = (model, T, routed, cf, t_f, t_t, ct, t_ts, t_g, flops / t_f / 1e6)
            rows.append(row)
            print(f"{model} T={T} routed={routed} {cf}: fused {t_f:.1f} us ({row[-1]:.0f} TFLOP/s), "
                  f"BF16 twin {t_t:.1f} ({t_f / t_t:.3f}x), best twin {ct} + sq {t_ts:.1f} ({t_f / t_ts:.3f}x), "
                  f"grouped_mm+sq {t_g:.1f} ({t_f / t_g:.3f}x)", flush=True)
            del x, gu, packed, scales, dense_scales
        del w, wt
        torch.cuda.empty_cache()
    return rows


def _shape(c):
    return f"{c[0]}x{c[1]}, {c[3]} warps, {c[4]} stages, {'one dot' if c[5] else 'two dots'}"


def table(rows):
    out = ["| model | T | routed rows | fused tile | fused us (TFLOP/s) | BF16 twin (same tile) us | fused / twin | "
           "fastest twin + swiglu_quantize us | fused / (twin + sq) | torch._grouped_mm + sq us | fused / (grouped_mm + sq) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, T, routed, cf, tf, tt, ct, tts, tg, tfl in rows:
        out.append(f"| {m} | {T} | {routed} | {_shape(cf)} | {tf:.1f} ({tfl:.0f}) | {tt:.1f} | {tf / tt:.3f} | {tts:.1f} | "
                   f"{tf / tts:.3f} | {tg:.1f} | {tf / tg:.3f} |")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("lib")
    p.add_argument("--check", action="store_true")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--sizes", default="64,512,4096,32768")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--out")
    p.add_argument("--check-shard", default="0/1", help="i/n: only every n-th check case from i")
    p.add_argument("--warm", help="i/n: compile shard i of n of the benchmark's kernels, then exit")
    a = p.parse_args()
    seed = int(os.environ.get("FP4FUSE_SEED", time.time_ns() % (1 << 31)))
    print(f"seed {seed}; {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}",
          flush=True)
    ref = Reference(a.lib)
    rc = 0
    if a.warm:
        i, n = (int(v) for v in a.warm.split("/"))
        warm(i, n, [int(s) for s in a.sizes.split(",")])
        return 0
    if a.check:
        i, n = (int(v) for v in a.check_shard.split("/"))
        bad = check(ref, seed, i, n)
        print("CHECK PASS: fused NVFP4 bit-identical to fp4fuse::swiglu_quantize on the accumulators" if bad == 0
              else f"CHECK FAIL: {bad} bytes differ", flush=True)
        rc = 1 if bad else 0
    if a.bench:
        t = table(bench(ref, [int(s) for s in a.sizes.split(",")], a.reps, seed))
        print(t)
        if a.out:
            with open(a.out, "w") as f:
                f.write(t + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
