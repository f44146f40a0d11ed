#!/usr/bin/env bash
# Session 96, run 1, on .carry/s96a (HEAD's kernels plus PREFIXD_CONCURRENT_CHAIN=all, off by
# default: the concurrent steps whose decode is the one-item decode chained on one stream, as the
# TMA decode's are since session 92), for an H200 (an H100 gives every step but the planner grid),
# most important first, later steps only while time lasts:
# (1) the one-item chain's A/B at the head_dim-256 rows (32/8 and 32/32 D256 B256 P32768 S256, the
#     model's plans; fp16 32/8 D256 read 498.6 µs against a bar of 498.5 in session 94): the
#     default (two streams at head_dim 256) against =all, parts timed alone; fp16 then bf16;
# (2) session 95's look-ahead A/B (PREFIXD_DECODE_TMA_L2_AHEAD) at 32/8 B256 P8192 / P32768 S256:
#     the default, 2 and 4 tiles ahead; forced k = 12, 14, 16 with and without 4 ahead; fp16 then bf16;
# (3) the two new GPU tests with the chained and TMA-decode tests; memcheck on the new tests;
# (4) on an H200 only, the planner checks on the bar's grid shapes (session 94's unrun run 2).
#   mkdir -p .carry/s96a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T16 > .carry/s96a/bins.tar.xz
#   CARRY=.carry/s96a bash bench/kernel/sessions/s96-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s96-run1
RUN_TIMEOUT=150 run_variants chain-d256-fp16 "default,PREFIXD_CONCURRENT_CHAIN=all" --heads 32/8,32/32 -d 256 -b 256 \
  -p 32768 -s 256 --dtype fp16
SHOW_LINES=12 show_variants chain-d256-fp16
show_parts chain-d256-fp16
A=PREFIXD_DECODE_TMA_L2_AHEAD
V=default,$A=2,$A=4
for k in 12 14 16; do
  F=PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force
  V=$V,$F,$F+$A=4
done
RUN_TIMEOUT=120 run_variants ahead-fp16 "$V" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16
SHOW_LINES=24 show_variants ahead-fp16
show_parts ahead-fp16
GPU_TESTS_TIMEOUT=120 run_gpu_tests '*OneItemDecodesChain*:*L2LookAhead*:*Chained*:*TmaDecode*'
if [ "$SECONDS" -lt 330 ]; then
  RUN_TIMEOUT=150 run_variants chain-d256-bf16 "default,PREFIXD_CONCURRENT_CHAIN=all" --heads 32/8,32/32 -d 256 \
    -b 256 -p 32768 -s 256 --dtype bf16
  SHOW_LINES=12 show_variants chain-d256-bf16
fi
if [ "$SECONDS" -lt 380 ]; then
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
    --gtest_filter='*OneItemDecodesChain*:*L2LookAhead*' >"$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
fi
if [ "$SECONDS" -lt 420 ]; then
  RUN_TIMEOUT=100 run_variants ahead-bf16 "$V" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype bf16
  SHOW_LINES=24 show_variants ahead-bf16
fi
# The planner item is an H200 figure: on an H100 its checks are left for a later run.
if [ "$SECONDS" -lt 440 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 140 $B --planner-check --dtype fp16 >"$OUT/grid-fp16.txt" 2>&1
  echo "== planner grid-fp16 rc=$?, $(grep -cE '^ +(fp16|bf16) ' "$OUT/grid-fp16.txt") shapes"
  grep -E "planner check:|measured choice" "$OUT/grid-fp16.txt" | grep -v "must be"
  grep -E "SLOW|WRONG" "$OUT/grid-fp16.txt" | grep -E '^ +(fp16|bf16) ' | head -20
fi
echo "elapsed ${SECONDS} s"
pack_logs
