#!/usr/bin/env bash
# Session 95, run 1, on .carry/s95a (HEAD's kernels plus PREFIXD_DECODE_TMA_L2_AHEAD, off by
# default), for an H200, in one call with the session's last ~450 s of device time, most important
# first, later steps only while time lasts:
# (1) the look-ahead A/B at the two concurrent TMA rows (32/8 B256 P8192 / P32768 S256, fp16, then
#     bf16): the default, 2 and 4 tiles ahead; and at forced k = 12, 14, 16 with and without 4
#     ahead (does a faster decode per SM let the prefix have more SMs?); parts timed alone;
# (2) the new GPU test (the look-ahead keeps the default's bits) with the chained and TMA-decode
#     tests; memcheck on the new test;
# (3) on an H200 only, the planner checks on the bar's grid shapes (the defaults), their first with
#     the chained step (session 94's unrun run 2).
#   mkdir -p .carry/s95a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T16 > .carry/s95a/bins.tar.xz
#   CARRY=.carry/s95a bash bench/kernel/sessions/s95-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s95-run1
A=PREFIXD_DECODE_TMA_L2_AHEAD
V=default,$A=2,$A=4
for k in 12 14 16; do
  F=PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force
  V=$V,$F,$F+$A=4
done
# The A/B first (its one checked request per row guards the results too), each dtype in its own call.
RUN_TIMEOUT=120 run_variants ahead-fp16 "$V" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16
SHOW_LINES=24 show_variants ahead-fp16
show_parts ahead-fp16
GPU_TESTS_TIMEOUT=100 run_gpu_tests '*L2LookAhead*:*Chained*:*TmaDecode*'
if [ "$SECONDS" -lt 250 ]; then
  RUN_TIMEOUT=120 run_variants ahead-bf16 "$V" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype bf16
  SHOW_LINES=24 show_variants ahead-bf16
  show_parts ahead-bf16
fi
if [ "$SECONDS" -lt 300 ]; then
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
    --gtest_filter='*L2LookAhead*' >"$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
fi
# The planner item is an H200 figure: on an H100 its checks are left for a later run.
if [ "$SECONDS" -lt 330 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for dt in fp16 bf16; do
    timeout 150 $B --planner-check --dtype $dt >"$OUT/grid-$dt.txt" 2>&1
    echo "== planner grid-$dt rc=$?, $(grep -cE '^ +(fp16|bf16) ' "$OUT/grid-$dt.txt") shapes"
    grep -E "planner check:|measured choice" "$OUT/grid-$dt.txt" | grep -v "must be"
    grep -E "SLOW|WRONG" "$OUT/grid-$dt.txt" | grep -E '^ +(fp16|bf16) ' | head -20
  done
fi
echo "elapsed ${SECONDS} s"
pack_logs
