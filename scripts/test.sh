#!/usr/bin/env bash
# Builds and runs every test. GPU tests run where a CUDA GPU is present and report SKIP elsewhere.
# Extra arguments go to `meson test` (e.g. --suite cpu).
#
# Builds only what the tests need: no examples or benchmarks (the tests compile the example
# sources they check themselves), unit tests for gpu_targets only (the compile suite covers the
# other targets). The build directory is build/test; Meson's full configure output is in
# build/test/meson-logs/meson-log.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
FP4FUSE_NEED_CATCH2=1 FP4FUSE_NEED_CONSUMER_TOOLS=1 FP4FUSE_NEED_BRIDGE_TOOLS=1 FP4FUSE_NEED_TRITON=1 FP4FUSE_NEED_CUTLASS=1 \
  source scripts/setup.sh

build=build/test
options=(-Dtests=enabled -Dexamples=false -Dbench=false)
setup_log="$(mktemp)"
trap 'rm -f "$setup_log"' EXIT
if [ -f "$build/build.ninja" ]; then
  setup=(meson setup --reconfigure "$build" "${options[@]}")
else
  setup=(meson setup "$build" "${options[@]}")
fi
start=$SECONDS
if ! "${setup[@]}" >"$setup_log" 2>&1; then
  cat "$setup_log"
  echo "fp4fuse: \`${setup[*]}\` failed (output above)" >&2
  exit 1
fi
# The configure output in a few lines: tools, dependencies and options; the rest is in meson-log.txt.
grep -E '^(Cuda compiler for the host|Run-time dependency catch2|Build targets in project)' "$setup_log" |
  sed 's/^/  /' || true
echo "fp4fuse: configured $build (${options[*]}); building the tests (Ninja prints each compile as it starts)"
meson compile -C "$build"
echo "fp4fuse: built in $((SECONDS - start)) s; running the tests"
status=0
# Meson prints a line per finished test only, and some compile checks take minutes: say every
# minute how long it has been and which tests are running.
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" "$@" &
test_pid=$!
(
  while sleep 60; do
    kill -0 "$test_pid" 2>/dev/null || exit 0
    running="$(ps -o args= --ppid "$test_pid" 2>/dev/null | while read -r line; do
      grep -oE '[^ /]+\.(cu|py|sh)|test_[a-z0-9_]+' <<<"$line" | paste -sd ' ' - || true
    done | paste -sd ';' - || true)"
    echo "fp4fuse: $((SECONDS - start)) s, still testing: ${running:-(starting)}"
  done
) &
ticker_pid=$!
wait "$test_pid" || status=$?
kill "$ticker_pid" 2>/dev/null || true
wait "$ticker_pid" 2>/dev/null || true
echo "fp4fuse: test command took $((SECONDS - start)) s in all"
python3 scripts/summary.py "$build/meson-logs/testlog.json"
exit "$status"
