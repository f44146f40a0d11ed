#!/usr/bin/env bash
# Session 92, run 1: the concurrent step's timeline at the headline row (32/8 D128 B256 P32768 S256,
# fp16, the model's k = 16), to price a merge that starts before the prefix grid ends: under the
# CUPTI trace (bench/trace/cupti_trace.cc) each kernel's start and end in every timed step (the
# prefix grid, the TMA decode beside it, the merge after the join), then the same step without the
# trace with --without-merge (the merge's share of the step). On an H200 the bar grid after it.
# Carry .carry/s92a (ignored, local): HEAD's prefixd_kernel_bench, prefixd_gpu_tests, prefixd,
# libprefixd_cupti_trace.so and the toolkit's libcupti.so.13:
#   mkdir -p .carry/s92a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     bench/libprefixd_cupti_trace.so tests/prefixd_gpu_tests launch/prefixd \
#     -C /usr/local/cuda/lib libcupti.so.13 | xz -6 -T4 > .carry/s92a/bins.tar.xz
#   CARRY=.carry/s92a bash bench/kernel/sessions/s92-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s92-run1
SHAPE=(--heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline -c 1)
d="$OUT/trace"; mkdir -p "$d"
LD_LIBRARY_PATH=/tmp/b CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR="$d" \
  timeout 120 $B "${SHAPE[@]}" --no-graph --csv "$d/bench.csv" >"$d/out.txt" 2>&1
echo "trace rc=$? $(grep -c . "$d"/trace.*.csv 2>/dev/null) rows"; grep -E '^ +fp16 ' "$d/out.txt" | cut -c1-120
timeout 120 $B "${SHAPE[@]}" -p 8192,32768 --without-merge --csv "$OUT/wm.csv" >"$OUT/wm.txt" 2>&1
echo "without-merge rc=$?"; grep -E '^ +fp16 ' "$OUT/wm.txt" | cut -c1-120; grep -o 'without-merge [0-9.]* us' "$OUT/wm.txt"
grep -o 'concurrent(k=[0-9]*[^)]*)' "$OUT/wm.txt" | sort | uniq -c
run_bar_grid
pack_logs
