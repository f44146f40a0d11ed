#!/usr/bin/env bash
# Session 96, run 5, on .carry/s96d (PREFIXD_CONCURRENT_CHAIN=all the default: the one-item decode's
# concurrent steps chained too). Run 4 had run the whole GPU suite on .carry/s96c with the setting
# in the environment (an H100: 1325 passed; 4 failed, every one a test of the two-stream form or
# of the description, now mended; memcheck 0 errors in 93 tests, racecheck 0 hazards in 27).
# (1) the mended tests and every concurrent, early-decode, graph and cascade test on the default;
# memcheck on the new ones; (2) the head_dim-256 A/B again, the new default against =1 (the
# TMA-only chain of sessions 92-95); (3) on an H200, the bar's head_dim rows.
#   CARRY=.carry/s96d bash bench/kernel/sessions/s96-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s96-run5
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaConcurrentCascade.*:CudaEarlyDecode.*:CudaGraph.*:CudaCascade.*'
MEMCHECK_TIMEOUT=100 run_memcheck '*OneItem*:CudaGraph.ConcurrentStepReplaysCorrectly'
RUN_TIMEOUT=100 run_variants d256 "default,PREFIXD_CONCURRENT_CHAIN=1" --heads 32/8 -d 256 -b 256 -p 32768 -s 256,512 \
  --dtype fp16,bf16
SHOW_LINES=8 show_variants d256
# The bar's head_dim rows (the issue's method, as bench/kernel/issue4-grid.sh runs them) on an H200.
[ "$SECONDS" -lt 200 ] && run_head_dim_rows 150 --heads 32/32,32/8 --head-dim 64,256
echo "elapsed ${SECONDS} s"
pack_logs
