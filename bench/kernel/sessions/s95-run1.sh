#!/usr/bin/env bash
# Session 95, run 1, on .carry/s95a (HEAD's kernels plus PREFIXD_DECODE_TMA_L2_AHEAD, off by
# default), for an H200, in one call (each start costs 1-3 minutes of device time), most important
# first:
# (1) the new GPU test (the TMA decode's L2 look-ahead keeps the default's bits) with the chained
#     and TMA-decode tests, and memcheck on the new test;
# (2) the look-ahead A/B at the two concurrent TMA rows (32/8 B256 P8192 / P32768 S256, fp16 and
#     bf16): the default, 2 and 4 tiles ahead; and at forced k = 12, 14, 16 with and without 4
#     ahead (does a faster decode per SM let the prefix have more SMs?); parts timed alone;
# (3) on an H200 only, the planner checks on the bar's shapes and off the grid
#     (run_offgrid_planner_checks, 233 shapes; the defaults), their first with the chained step
#     (session 94's unrun run 2);
# (4) the whole GPU suite and both sanitizers (12 shards) if at most 300 s have gone.
#   mkdir -p .carry/s95a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T16 > .carry/s95a/bins.tar.xz
#   CARRY=.carry/s95a bash bench/kernel/sessions/s95-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s95-run1
GPU_TESTS_TIMEOUT=120 run_gpu_tests '*L2LookAhead*:*Chained*:*TmaDecode*'
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='*L2LookAhead*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
A=PREFIXD_DECODE_TMA_L2_AHEAD
V=default,$A=2,$A=4
for k in 12 14 16; do
  F=PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force
  V=$V,$F,$F+$A=4
done
for dt in fp16 bf16; do
  RUN_TIMEOUT=120 run_variants ahead-$dt "$V" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype $dt
done
SHOW_LINES=24 show_variants ahead-fp16 ahead-bf16
show_parts ahead-fp16 ahead-bf16
# The planner item is an H200 figure: on an H100 its checks are left for a later run. The bar's
# shapes first (the grid half of run_offgrid_planner_checks), the off-grid ones while time lasts.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for dt in fp16 bf16; do
    timeout 200 $B --planner-check --dtype $dt >"$OUT/grid-$dt.txt" 2>&1
    echo "== planner grid-$dt rc=$?, $(grep -cE '^ +(fp16|bf16) ' "$OUT/grid-$dt.txt") shapes"
    grep -E "planner check:|measured choice" "$OUT/grid-$dt.txt" | grep -v "must be"
    grep -E "SLOW|WRONG" "$OUT/grid-$dt.txt" | grep -E '^ +(fp16|bf16) ' | head -20
  done
  if [ "$SECONDS" -lt 330 ]; then run_offgrid_planner_checks; fi
fi
echo "elapsed ${SECONDS} s"
if [ "$SECONDS" -lt 300 ]; then
  PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 run_whole_suite
else
  echo "whole suite skipped: ${SECONDS} s gone"
fi
pack_logs
