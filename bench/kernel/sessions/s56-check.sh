#!/usr/bin/env bash
# Session 56, run 4 (nvidia-h200): the whole GPU suite on the session's final binaries (8 shards;
# the random-shape test among them with its default 24 draws), and the main job on the GPU at 32/8.
#   CARRY=.carry/s56d bash bench/kernel/sessions/s56-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s56-check
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=300 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -15
grep -h '^\[ fuzz' "$OUT"/check/*.log 2>/dev/null | head -3
run_main_job_heads 32/8
pack_logs
