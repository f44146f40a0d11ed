#!/usr/bin/env bash
# Session 58, run 5 (nvidia-h200): the whole GPU suite on the final binaries (the 160-token tile's
# launcher message reworded, the planner's settings read once per backend), the default sanitizer
# lists, and the main job at 32/8.
#   CARRY=.carry/s58d bash bench/kernel/sessions/s58-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s58-final
run_whole_suite
grep -h "FAILED  \]" "$OUT"/check/*.log 2>/dev/null | sort -u | head -5
run_main_job_heads 32/8
pack_logs
