#!/usr/bin/env bash
# The Triton module's GPU run (H200): the helpers' bit comparison with the C++ library (8 shards in
# parallel), the MoE example's check, then its benchmark alone on the GPU. Run from the repository
# root or from a copy made by scripts/stage_gpu_triton.sh (the same paths, plus bc/ with the
# bitcode and libfp4fuse_triton_ref.so). Logs go to $OUT (default ./out).
set -u
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/bridges/python FP4FUSE_BITCODE_DIR=${FP4FUSE_BITCODE_DIR:-$PWD/bc} TRITON_CACHE_DIR=$PWD/triton_cache
export FP4FUSE_SEED=${FP4FUSE_SEED:-$(( $(date +%s%N) % 2147483647 ))}
LIB=$PWD/libfp4fuse_triton_ref.so
SIZES=${SIZES:-64,512,4096,32768}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$OUT/gpu.txt" 2>&1
t0=$SECONDS
pids=()
for i in 0 1 2 3 4 5 6 7; do
  timeout -s KILL "${T1:-150}" python3 tests/bridges/triton/gpu_test.py "$LIB" --shard "$i/8" > "$OUT/test_$i.log" 2>&1 & pids+=($!)
done
# Two check processes: each holds a model's W (DeepSeek-V3: 15 GB) beside the others' data (a
# run with 8 ran out of the H200's memory).
for i in 0 1; do
  timeout -s KILL "${T1:-150}" python3 bridges/python/examples/moe_l1_triton.py "$LIB" --check --check-shard "$i/2" > "$OUT/check_$i.log" 2>&1 & pids+=($!)
done
[ "${BENCH:-1}" = 1 ] && for i in 0 1 2 3 4 5 6 7; do
  timeout -s KILL "${T1:-150}" python3 bridges/python/examples/moe_l1_triton.py "$LIB" --warm "$i/8" --sizes "$SIZES" > "$OUT/warm_$i.log" 2>&1 & pids+=($!)
done
rcs=()
for p in "${pids[@]}"; do wait "$p"; rcs+=($?); done
t1=$SECONDS
rb=skipped
if [ "${BENCH:-1}" = 1 ]; then
  timeout -s KILL "${T2:-120}" python3 bridges/python/examples/moe_l1_triton.py "$LIB" --bench --sizes "$SIZES" --out "$OUT/table.md" > "$OUT/bench.log" 2>&1
  rb=$?
fi
echo "== $(cat "$OUT/gpu.txt" | tr '\n' ' ')"
echo "== seed $FP4FUSE_SEED; phase 1 (tests, check, compile) $((t1 - t0)) s, bench $((SECONDS - t1)) s"
echo "== exit codes: tests ${rcs[*]:0:8}; check ${rcs[*]:8:2}; warm ${rcs[*]:10}; bench $rb"
for f in "$OUT"/test_*.log "$OUT"/check_*.log "$OUT"/warm_*.log "$OUT"/bench.log; do
  [ -f "$f" ] && { echo "##### $f"; cat "$f"; }
done > "$OUT/all.log"
rm -f "$OUT"/test_*.log "$OUT"/check_*.log "$OUT"/warm_*.log
grep -h "^FAIL\|^PASS\|FAILED" "$OUT/all.log" | sort | uniq -c | head -30
grep -h "^check\|CHECK" "$OUT/all.log"
if [ "${BENCH:-1}" = 1 ]; then
  cat "$OUT/table.md" 2>/dev/null || tail -n 20 "$OUT/bench.log"
else
  echo "== bench skipped (BENCH=0)"
fi
# The exit status: 0 only where every test, check, warm-up and the bench (when run) returned 0.
for rc in "${rcs[@]}" "$([ "$rb" = skipped ] && echo 0 || echo "$rb")"; do [ "$rc" = 0 ] || exit 1; done
exit 0
