#!/usr/bin/env bash
# Session 59, run 6 (nvidia-h200): the whole GPU suite on the final binaries (the merge's run bounds
# by arithmetic, PREFIXD_MERGE_RUN_LOOKUP=auto; the opt-in early decode), the default sanitizer lists, both sanitizers on
# the early decode's graph test and the merge lookup test, and the main job at 32/8.
#   CARRY=.carry/s59e bash bench/kernel/sessions/s59-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-final
run_whole_suite
grep -h "FAILED  \]" "$OUT"/check/*.log 2>/dev/null | sort -u | head -5
run_sanitizers "CudaGraph.EarlyDecode*:CudaMergeStates.RunBounds*"
run_main_job_heads 32/8
pack_logs
