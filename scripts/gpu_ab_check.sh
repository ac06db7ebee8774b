#!/usr/bin/env bash
# GPU batch after a change to device code that the GEMMs use: the GPU tests it touches, sanitizers
# on the epilogue forms, bench_kernels, and an A/B of bench_gemm / bench_moe against the binaries
# before the change. Table last.   scripts/gpu_ab_check.sh BIN OLD_BIN [LOGS]
B=${1:?BIN}; O=${2:?OLD_BIN (bench_gemm_old, bench_moe_old: the binaries before the change)}; L=${3:-/tmp/logs}
cd "$(dirname "$0")/.."
mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
STEP_LIMIT=200 bash scripts/gpu_check.sh $B $L test:gemm_dense test:gemm_grouped test:epilogue_row test:epilogue_swiglu_quantize \
  test:epilogue_host_twin test:epilogue_scale_padding test:kernels_quantize test:kernels_dequantize test:kernels_swiglu_quantize test:activation \
  test:detail_launch test:arch_mismatch test:kernels_amax > $L/summary_tests.txt 2>&1
san=()
for spec in memcheck:epilogue_row racecheck:epilogue_row "memcheck:epilogue_swiglu_quantize:*separate*" "memcheck:epilogue_swiglu_quantize:*amax*"; do
  IFS=: read -r tool t filt <<<"$spec"; t0=$SECONDS
  timeout -s KILL 120 bash tests/sanitize.sh $tool $B/test_$t ${filt:+"$filt"} > $L/san_${tool}_$t.log 2>&1; rc=$?
  san+=("| $tool $t $filt | $rc | $((SECONDS-t0)) s | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' $L/san_${tool}_$t.log | tail -2 | tr '\n' ' ' | cut -c1-140) |")
done
ab=()
bench() {  # name log cmd...
  local n=$1 log=$2; shift 2; local t0=$SECONDS
  timeout -s KILL 150 "$@" > $L/$log 2>&1; ab+=("| $n | $? | $((SECONDS-t0)) s |")
}
bench kernels kernels.log $B/bench_kernels --markdown $L/kernels.md
bench gemm_old1 gemm_old1.log $O/bench_gemm_old --reps 10 --markdown $L/gemm_old1.md
bench gemm_new1 gemm_new1.log $B/bench_gemm --reps 10 --markdown $L/gemm_new1.md
bench gemm_old2 gemm_old2.log $O/bench_gemm_old --reps 10 --markdown $L/gemm_old2.md
bench gemm_new2 gemm_new2.log $B/bench_gemm --reps 10 --markdown $L/gemm_new2.md
bench moe_old moe_old.log $O/bench_moe_old --reps 5 --markdown $L/moe_old.md
bench moe_new moe_new.log $B/bench_moe --reps 5 --markdown $L/moe_new.md
grep -h -B3 -A14 "FAILED" $L/test_*.log | head -60
[ -n "${OUT:-}" ] && (cd $L && tar czf $OUT/logs.tgz *.log *.md *.txt)
cat $L/summary_tests.txt | tail -16
printf '%s\n' "${san[@]}" "${ab[@]}"
