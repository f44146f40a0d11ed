#!/usr/bin/env bash
# Session 72, run 6 (nvidia-h200): the planner check on the final binaries (the two producer threads
# of run 1): the kernel benchmark's --planner-check on its default grid (heads 32/32 and 32/8,
# B 16/64/256, P 128-32768, S 32/256), fp16 then bf16.
#   CARRY=.carry/s72e bash bench/kernel/sessions/s72-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run6
run_planner_check fp16 bf16
pack_logs
