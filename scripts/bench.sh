#!/usr/bin/env bash
# Builds and runs the standalone-kernel benchmark on the current GPU. Writes the markdown table to
# the file given as first argument (default: build/bench/results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build=build/bench
[ -d "$build" ] || meson setup "$build" -Dtests=disabled -Dexamples=false
meson compile -C "$build" bench_kernels
"$build/bench/bench_kernels" --markdown "${1:-$build/results.md}"
