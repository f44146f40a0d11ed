#!/usr/bin/env bash
# Session 60, run 5 (nvidia-h200): the whole GPU suite on the final binaries (narrow slots in the
# prefix stream and the TMA-decode mode's k = 14 / 16 by default; the SM count and occupancy
# cached), the default sanitizer lists, both sanitizers on the narrow-slot oracle test, the
# planner's concurrent test and the early decode's graph test, and the main job at 32/8.
#   CARRY=.carry/s60e bash bench/kernel/sessions/s60-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-final
run_whole_suite
grep -h "FAILED  \]" "$OUT"/check/*.log 2>/dev/null | sort -u | head -5
run_sanitizers "CudaCascade.BalancedPrefixGridMatchesTheOracle:CudaConcurrentCascade.ThePlannersChoiceRunsConcurrently:CudaGraph.EarlyDecode*"
run_main_job_heads 32/8
pack_logs
