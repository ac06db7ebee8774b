#!/usr/bin/env python3
"""Times the unfused reference of the grouped MoE L1 on the GPU with PyTorch: torch._grouped_mm
(BF16 in, BF16 out, FP32 accumulate) over tokens sorted by expert, for the routings that
bench/bench_moe.cu wrote (same counts, so both sides time the same problem). The benchmark adds
fp4fuse::swiglu_quantize after it (timed by bench_moe) to form the best unfused pipeline.

usage: torch_grouped_mm.py ROUTINGS.json OUT.json [--reps N] [--idle-ms MS]

--idle-ms: the GPU idles MS milliseconds before each configuration's timing (default 3000 when the
file has more than one configuration, else 0), so that each starts from the same clock and power
state, as bench_moe's --idle-ms does.

ROUTINGS.json: {"configs": [{"name": str, "experts": E, "hidden": H, "n": 2I, "counts": [E ints]}]}
OUT.json: {"torch": version, "gpu": name, "copy_gbps": x, "results": [{"name": str, "grouped_mm_us": median,
           "spread_us": [min, max], "ref_tflops": x}]}
ref_tflops: the 8192^3 BF16 GEMM (torch.matmul, cuBLAS) timed in the same round robin as the
configuration's grouped_mm, so at the clock and power state it ran in (the H200 runs long GEMMs at
its 700 W limit, 1.3-1.5 GHz); bench_moe times the same reference in its own round robin and
scales torch's time by the two rates to compare both pipelines at one clock.
Weights are random bf16 [E, 2I, H] (nn.Linear layout, passed transposed as [E, H, 2I]); the L2 is
flushed by a 256 MiB read before every timed launch, as in bench_support.cuh.
"""
import json
import statistics
import sys
import time

import torch


def round_robin_us(fns, reps, flush):
    """Median, min and max of each of fns, timed alternately (one of each per round, L2 flushed
    before each), after 3 untimed rounds."""
    for _ in range(3):
        for fn in fns:
            fn()
    torch.cuda.synchronize()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)] for _ in fns]
    for i in range(reps):
        for j, fn in enumerate(fns):
            flush()
            ev[j][i][0].record()
            fn()
            ev[j][i][1].record()
    torch.cuda.synchronize()
    out = []
    for j in range(len(fns)):
        times = [s.elapsed_time(e) * 1000.0 for s, e in ev[j]]
        out.append((statistics.median(times), min(times), max(times)))
    return out


def main():
    args = sys.argv[1:]
    reps = 10
    if "--reps" in args:
        i = args.index("--reps")
        reps = int(args[i + 1])
        del args[i:i + 2]
    idle_ms = None
    if "--idle-ms" in args:
        i = args.index("--idle-ms")
        idle_ms = int(args[i + 1])
        del args[i:i + 2]
        if idle_ms < 0:
            sys.exit("--idle-ms takes milliseconds >= 0 (0: configurations back to back)")
    routings_path, out_path = args
    with open(routings_path) as f:
        configs = json.load(f)["configs"]
    if idle_ms is None:
        idle_ms = 3000 if len(configs) > 1 else 0
    dev = torch.device("cuda")
    flush_buf = torch.zeros(256 << 20, dtype=torch.uint8, device=dev)

    def flush():  # reads 256 MiB: L2 holds none of the inputs, and no dirty lines
        flush_buf.view(torch.int64).sum()

    # Device copy bandwidth (read + write), for reference.
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    copy_us = round_robin_us([lambda: dst.copy_(src)], 20, lambda: None)[0][0]
    del src, dst
    ref_n = 8192
    ref_a = torch.randn(ref_n, ref_n, device=dev, dtype=torch.bfloat16)
    ref_b = torch.randn(ref_n, ref_n, device=dev, dtype=torch.bfloat16)
    ref_c = torch.empty(ref_n, ref_n, device=dev, dtype=torch.bfloat16)
    ref = lambda: torch.matmul(ref_a, ref_b, out=ref_c)
    results = []
    weights = {}
    for cfg in configs:
        E, H, N = cfg["experts"], cfg["hidden"], cfg["n"]
        counts = torch.tensor(cfg["counts"], dtype=torch.int64)
        total = int(counts.sum())
        key = (E, H, N)
        if key not in weights:
            weights.clear()
            torch.cuda.empty_cache()
            weights[key] = (torch.randn(E, N, H, device=dev, dtype=torch.bfloat16) * (H ** -0.5))
        w = weights[key]
        x = torch.randn(max(total, 1), H, device=dev, dtype=torch.bfloat16)
        offs = torch.cumsum(counts, 0).to(torch.int32).to(dev)
        try:
            fn = lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
            out = fn()
            assert out.shape == (x.shape[0], N), out.shape
            if idle_ms > 0:
                torch.cuda.synchronize()
                time.sleep(idle_ms / 1000.0)
            (med, lo, hi), (ref_us, _, _) = round_robin_us([fn, ref], reps, flush)
            ref_tflops = 2.0 * ref_n ** 3 / (ref_us * 1e-6) / 1e12
            results.append({"name": cfg["name"], "grouped_mm_us": med, "spread_us": [lo, hi], "ref_tflops": ref_tflops})
            print(f"{cfg['name']}: torch._grouped_mm {med:.1f} us (min {lo:.1f}, max {hi:.1f}); same round robin: 8192^3 "
                  f"{ref_tflops:.0f} TFLOP/s", flush=True)
        except Exception as e:  # report, keep going: the C++ side prints what is missing
            print(f"{cfg['name']}: torch._grouped_mm failed: {e}", flush=True)
            results.append({"name": cfg["name"], "error": str(e)})
        del x
    with open(out_path, "w") as f:
        json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "copy_gbps": 2 * (1 << 30) / copy_us / 1e3,
                   "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
