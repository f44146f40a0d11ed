#!/usr/bin/env bash
# Session 91, run 1: the neighbouring-k candidates from the layout choice's own report (4d2430e).
# On an H200 the grid and head_dim rows (run_bar_grid: every concurrent row's measured choice times
# them); on any other card the two concurrent rows of the grid (32/8 B256 P8192 / P32768 S256, fp16)
# with the measured choice instead. On any card then the concurrent, planner, measured-choice and
# cascade GPU tests (8 shards) and the main job on one rank.
# Carry .carry/s91a (ignored, local): 4d2430e's prefixd_kernel_bench, prefixd_gpu_tests, prefixd:
#   mkdir -p .carry/s91a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s91a/bins.tar.xz
#   CARRY=.carry/s91a bash bench/kernel/sessions/s91-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s91-run1
run_bar_grid
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 200 $B --heads 32/8 -b 256 -p 8192,32768 -s 256 --measured-choice --no-baseline -c 2 \
    --csv "$OUT/concurrent.csv" >"$OUT/concurrent.txt" 2>&1
  echo "concurrent rows rc=$?"; grep -E '^ +fp16 ' "$OUT/concurrent.txt" | cut -c1-110
  grep -o 'measured-choice([^)]*)' "$OUT/concurrent.txt"
fi
run_test_shards 'CudaConcurrent*:*Planner*:*Measured*:CudaCascade*'
run_main_job 150
pack_logs
