#!/usr/bin/env bash
# Runs GPU tests, examples and benchmarks from binaries built on another machine (a lent GPU
# machine has no time to compile): each step under a time limit, its log in LOGS, and a summary
# table last. Used for every GPU result in bench/RESULTS.md.
#
#   scripts/gpu_check.sh BIN LOGS STEP...
#   BIN: a directory with the binaries (test_*, the examples, bench_*), LOGS: where logs go.
#   STEP: test:NAME[:filter]   BIN/test_NAME --gpu [filter]
#         run:NAME:ARGS        BIN/NAME ARGS (an example), ARGS with ',' for spaces
#         moe-bench[:ARGS]     bench_moe's routings, torch._grouped_mm on them, bench_moe with them
#         bench:NAME:ARGS      BIN/NAME ARGS (bench_gemm, bench_kernels), ARGS with ',' for spaces
#   Each step is killed after STEP_LIMIT seconds (default 300).
set -uo pipefail
bin=$1 logs=$2
shift 2
mkdir -p "$logs"
limit=${STEP_LIMIT:-300}
summary=()
run_step() {  # name, log file, command...
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  timeout -s KILL "$limit" "$@" >"$log" 2>&1
  local rc=$?
  local last
  last=$(grep -E "passed|failed|FAILED|OK$|SKIP|error|Error" "$log" | tail -n 1 | cut -c1-110)
  summary+=("| $name | $rc | $((SECONDS - t0)) s | ${last:-$(tail -n 1 "$log" | cut -c1-110)} |")
}
for step in "$@"; do
  IFS=: read -r kind name rest <<<"$step"
  case $kind in
    test) run_step "test_$name ${rest}" "$logs/test_$name.log" "$bin/test_$name" --gpu ${rest:+"$rest"} ;;
    run) run_step "$name ${rest//,/ }" "$logs/$name.log" "$bin/$name" ${rest//,/ } ;;
    bench) run_step "$name ${rest//,/ }" "$logs/$name.log" "$bin/$name" ${rest//,/ } ;;
    moe-bench)
      extra=${name//,/ }
      "$bin/bench_moe" --routings-out "$logs/routings.json" $extra >"$logs/bench_moe_routings.log" 2>&1
      run_step "torch._grouped_mm" "$logs/torch_grouped_mm.log" python3 bench/torch_grouped_mm.py "$logs/routings.json" "$logs/torch.json"
      run_step "bench_moe $extra" "$logs/bench_moe.log" "$bin/bench_moe" --torch "$logs/torch.json" --markdown "$logs/bench_moe.md" $extra
      ;;
    *) echo "unknown step $step" >&2 ;;
  esac
done
echo
echo "| step | rc | time | last line |"
echo "|---|---:|---:|---|"
printf '%s\n' "${summary[@]}"
