#!/usr/bin/env bash
# Session 75, run 6 (nvidia-h200): the final binaries (this session's long-run merge kernel; every
# other kernel as session 72's): the issue's grid and head_dim rows against the fused floor, then
# the whole GPU suite with both sanitizers (launch/gpu-check.sh's default lists, the racecheck list
# with a 44-state merge), 12 shards.
#   CARRY=.carry/s75b bash bench/kernel/sessions/s75-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/s75-run6}
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -vE '^$' | tail -16
grep -h "GEMM\|copy BW" "$OUT"/grid/grid.txt | head -2
. bench/kernel/device-setup.sh s75-run6 >/dev/null
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=240 PREFIXD_TIMEOUT_MEMCHECK=150 PREFIXD_TIMEOUT_RACECHECK=100 run_whole_suite
pack_logs
