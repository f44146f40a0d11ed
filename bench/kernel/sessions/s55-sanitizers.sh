#!/usr/bin/env bash
# Session 55, run 4 (nvidia-h200): compute-sanitizer memcheck and racecheck with gpu-check's default
# filters (launch/gpu-check.sh) on the session's final binaries; only one small GPU test besides.
#   CARRY=.carry/s55b bash bench/kernel/sessions/s55-sanitizers.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-sanitizers
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_GPU_FILTER='CudaBackendErrors*' \
  PREFIXD_TIMEOUT_MEMCHECK=280 PREFIXD_TIMEOUT_RACECHECK=280 bash launch/gpu-check.sh 2>&1 | tail -6
grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' "$OUT"/check/*.log | sort | uniq -c
pack_logs
