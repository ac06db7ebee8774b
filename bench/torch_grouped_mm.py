#!/usr/bin/env python3
"""Times the unfused reference of the grouped MoE L1 on the GPU with PyTorch: torch._grouped_mm
(BF16 in, BF16 out, FP32 accumulate) over tokens sorted by expert, for the routings that
bench/bench_moe.cu wrote (same counts, so both sides time the same problem). The benchmark adds
fp4fuse::swiglu_quantize after it (timed by bench_moe) to form the best unfused pipeline.

usage: torch_grouped_mm.py ROUTINGS.json OUT.json [--reps N]

ROUTINGS.json: {"configs": [{"name": str, "experts": E, "hidden": H, "n": 2I, "counts": [E ints]}]}
OUT.json: {"torch": version, "gpu": name, "copy_gbps": x, "results": [{"name": str, "grouped_mm_us": median,
           "spread_us": [min, max]}]}
Weights are random bf16 [E, 2I, H] (nn.Linear layout, passed transposed as [E, H, 2I]); the L2 is
flushed by a 256 MiB read before every timed launch, as in bench_support.cuh.
"""
import json
import statistics
import sys

import torch


def median_us(fn, reps, flush):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    for i in range(reps):
        flush()
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1000.0 for s, e in zip(start, end)]
    return statistics.median(times), min(times), max(times)


def main():
    args = sys.argv[1:]
    reps = 10
    if "--reps" in args:
        i = args.index("--reps")
        reps = int(args[i + 1])
        del args[i:i + 2]
    routings_path, out_path = args
    with open(routings_path) as f:
        configs = json.load(f)["configs"]
    dev = torch.device("cuda")
    flush_buf = torch.zeros(256 << 20, dtype=torch.uint8, device=dev)

    def flush():  # reads 256 MiB: L2 holds none of the inputs, and no dirty lines
        flush_buf.view(torch.int64).sum()

    # Device copy bandwidth (read + write), for reference.
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    copy_us, _, _ = median_us(lambda: dst.copy_(src), 20, lambda: None)
    del src, dst
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
            med, lo, hi = median_us(fn, reps, flush)
            results.append({"name": cfg["name"], "grouped_mm_us": med, "spread_us": [lo, hi]})
            print(f"{cfg['name']}: torch._grouped_mm {med:.1f} us (min {lo:.1f}, max {hi:.1f})", flush=True)
        except Exception as e:  # report, keep going: the C++ side prints what is missing
            print(f"{cfg['name']}: torch._grouped_mm failed: {e}", flush=True)
            results.append({"name": cfg["name"], "error": str(e)})
        del x
    with open(out_path, "w") as f:
        json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "copy_gbps": 2 * (1 << 30) / copy_us / 1e3,
                   "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
