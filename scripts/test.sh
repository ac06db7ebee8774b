#!/usr/bin/env bash
# Builds and runs every test. GPU tests run where a CUDA GPU is present and report SKIP elsewhere.
# Extra arguments go to `meson test` (e.g. --suite cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
FP4FUSE_NEED_CATCH2=1 FP4FUSE_NEED_CONSUMER_TOOLS=1 source scripts/setup.sh

build=build/test
if [ -d "$build" ]; then
  meson setup --reconfigure "$build" -Dtests=enabled >/dev/null
else
  meson setup "$build" -Dtests=enabled
fi
meson compile -C "$build"
status=0
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" "$@" || status=$?
python3 scripts/summary.py "$build/meson-logs/testlog.json"
exit "$status"
