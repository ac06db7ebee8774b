#!/usr/bin/env bash
# The grouped MoE L1 benchmark on the current GPU (needs PyTorch with torch._grouped_mm for the
# reference pipeline): bench_moe writes the routings, bench/torch_grouped_mm.py times
# torch._grouped_mm on them, bench_moe times the fused kernel, swiglu_quantize and the roofline in
# the same run and prints the table (markdown in the directory given as first argument, default
# build/bench/moe). Further arguments go to bench_moe (for example --reps 5, --only 0 4096 0).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build=build/bench
out=${1:-$build/moe}
shift || true
[ -d "$build" ] || meson setup "$build" -Dtests=disabled -Dexamples=false
meson compile -C "$build" bench_moe
mkdir -p "$out"
"$build/bench/bench_moe" --routings-out "$out/routings.json" "$@"
python3 bench/torch_grouped_mm.py "$out/routings.json" "$out/torch.json"
"$build/bench/bench_moe" --torch "$out/torch.json" --markdown "$out/bench_moe.md" "$@"
