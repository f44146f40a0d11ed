#!/usr/bin/env bash
# Session 99, run 4, on .carry/s99c (as run 3), right after it on the same machine: the whole GPU
# suite (launch/gpu-check.sh, 8 shards, no sanitizer) with PREFIXD_CONCURRENT_STATES16=1 in the
# environment, to find every test that a 16-bit default would break (the bit-for-bit comparisons of a
# concurrent step with another step, the description checks) before it becomes the default.
#   CARRY=.carry/s99c bash bench/kernel/sessions/s99-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s99-run4
PREFIXD_CONCURRENT_STATES16=1 PREFIXD_SKIP_SANITIZER=1 PREFIXD_TIMEOUT_TESTS=240 run_whole_suite
grep -h -E '^\[  FAILED  \] [A-Za-z]' "$OUT"/check/*.log | sed 's/ (.*//' | sort -u | head -60
echo "elapsed $SECONDS s"
pack_logs
