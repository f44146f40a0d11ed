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
[ "$SECONDS" -lt 120 ] && run_head_dim_rows 80 --heads 32/8 --head-dim 256
echo "elapsed ${SECONDS} s"
pack_logs
