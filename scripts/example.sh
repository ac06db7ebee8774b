#!/usr/bin/env bash
# Builds and runs the examples: examples/quickstart.cu, the L1 GEMM example (examples/l1_gemm.cu)
# and the MoE L1 example (examples/moe_l1.cu, DeepSeek-V3 experts at T = 512). Without a GPU they
# run their host paths and say so. Arguments go to the L1 GEMM example: [T] [H] [I]
# [--engine auto|wgmma|mma] [--reps N] [--check-rows N] [--seed S].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

build=build/example
if [ ! -d "$build" ]; then
  meson setup "$build" -Dtests=disabled -Dbench=false
fi
meson compile -C "$build" quickstart l1_gemm moe_l1
"$build/examples/quickstart"
echo
"$build/examples/l1_gemm" "$@"
echo
"$build/examples/moe_l1" deepseek 512
