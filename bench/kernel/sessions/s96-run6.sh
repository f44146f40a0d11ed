#!/usr/bin/env bash
# Session 96, run 6 (run 5 got no machine; ~290 s of device time left), on .carry/s96d (588cdf8,
# PREFIXD_CONCURRENT_CHAIN=all the default): the four tests mended after run 4 and every
# concurrent, early-decode and graph test on the default, memcheck on the new and mended ones; on an
# H200 with time left, the fp16 and bf16 32/8 D256 head_dim rows by the issue's method.
#   CARRY=.carry/s96d bash bench/kernel/sessions/s96-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s96-run6
GPU_TESTS_TIMEOUT=120 run_gpu_tests 'CudaConcurrentCascade.*:CudaEarlyDecode.*:CudaGraph.*'
MEMCHECK_TIMEOUT=60 run_memcheck '*OneItem*:CudaGraph.ConcurrentStepReplaysCorrectly'
if [ "$SECONDS" -lt 120 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 80 $B --heads 32/8 -b 256 -p 32768 -s 256 --head-dim 256 --dtype fp16,bf16 --no-baseline -c 1 \
    --read-floor --measured-choice --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
  echo "dims rc=$?"
  python3 bench/kernel/fused_floor_table.py "$OUT/dims.csv" --log "$OUT/dims.txt" >"$OUT/dims-fused-floor.md" 2>&1
  grep -E '^\| (fp16|bf16)|ceilings' "$OUT/dims-fused-floor.md" | cut -c1-100
fi
echo "elapsed ${SECONDS} s"
pack_logs
