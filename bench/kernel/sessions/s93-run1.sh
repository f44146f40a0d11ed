#!/usr/bin/env bash
# Session 93, run 1: the chained concurrent step (PREFIXD_CONCURRENT_CHAIN=1, the default since
# 544839c) on b907c39's binaries, the runs session 92 had no device time for. On an H200 first the
# grid and head_dim rows (run_bar_grid: the bar's figures with the chain). On any card then the
# whole GPU suite and both sanitizers (launch/gpu-check.sh on the carried binaries, 12 shards; its
# memcheck list now holds the chained test), and the grid's two concurrent rows (32/8 B256 P8192 /
# P32768 S256, fp16) planned by the measured choice as the worker plans them.
#   mkdir -p .carry/s93a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T4 > .carry/s93a/bins.tar.xz
#   CARRY=.carry/s93a bash bench/kernel/sessions/s93-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s93-run1
run_bar_grid
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=240 run_whole_suite
timeout 60 $B --heads 32/8 -b 256 -p 8192,32768 -s 256 --measured-choice --no-baseline -c 2 \
  --csv "$OUT/concurrent.csv" >"$OUT/concurrent.txt" 2>&1
echo "concurrent rows rc=$?"; grep -E '^ +fp16 ' "$OUT/concurrent.txt" | cut -c1-110
grep -o 'measured-choice([^)]*)' "$OUT/concurrent.txt"
pack_logs
