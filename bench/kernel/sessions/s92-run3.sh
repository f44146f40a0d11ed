#!/usr/bin/env bash
# Session 92, run 3: the chained concurrent step as the default (PREFIXD_CONCURRENT_CHAIN=1 by
# default since run 2's A/B). (1) The concurrent, graph, early-decode, planner, measured-choice and
# cascade GPU tests in 8 shards (at most 150 s each); (2) compute-sanitizer memcheck on the chained
# tests (90 s); (3) the grid's two concurrent rows (32/8 B256 P8192 / P32768 S256, fp16), planned by
# the measured choice as the worker plans them.
#   mkdir -p .carry/s92c && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T4 > .carry/s92c/bins.tar.xz
#   CARRY=.carry/s92c bash bench/kernel/sessions/s92-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s92-run3
F='*Chained*:CudaConcurrent*:Shapes/CudaConcurrent*:CudaGraph*:CudaEarlyDecode*:*Planner*:*Measured*:CudaCascade*'
SHARD_TIMEOUT=150 run_test_shards "$F"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='*Chained*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
timeout 60 $B --heads 32/8 -b 256 -p 8192,32768 -s 256 --measured-choice --no-baseline -c 2 \
  --csv "$OUT/concurrent.csv" >"$OUT/concurrent.txt" 2>&1
echo "concurrent rows rc=$?"; grep -E '^ +fp16 ' "$OUT/concurrent.txt" | cut -c1-110
grep -o 'measured-choice([^)]*)' "$OUT/concurrent.txt"
pack_logs
