#!/usr/bin/env bash
# Session 57, run 4 (nvidia-h200): the whole GPU suite on the final binaries (the backend now reads
# the planner's settings at construction; a new test that malformed ones are refused there), the
# default sanitizer lists, and the main job at 32/8 and on the mixed workload.
#   CARRY=.carry/s57d bash bench/kernel/sessions/s57-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s57-final
run_whole_suite
grep -h "MalformedPlanner" "$OUT"/check/*.log 2>/dev/null | head -2
run_main_job_heads 32/8
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 120 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd --workload bench/kernel/sessions/s57-mixed.jsonl --layers 8 \
  >"$OUT/main-mixed.txt" 2>&1
echo "main mixed rc=$? $(grep -E '^# check: [0-9]+ of' "$OUT/main-mixed.txt")"
PREFIXD_MIN_PREFIX_CHUNK=0 timeout 60 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd --layers 2 >"$OUT/main-bad-setting.txt" 2>&1
echo "main with PREFIXD_MIN_PREFIX_CHUNK=0 rc=$? $(grep -m1 -o 'PREFIXD_MIN_PREFIX_CHUNK.*' "$OUT/main-bad-setting.txt")"
pack_logs
