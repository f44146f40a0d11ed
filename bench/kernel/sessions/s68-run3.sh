#!/usr/bin/env bash
# Session 68, run 3 (nvidia-h200): the grid and head_dim rows again with each shape's plain-read
# floor and the same bytes read as two launches (prefix, then suffix: read_split_us); then the
# planner check (fp16, bf16; not run since session 65). Binaries: HEAD's (no library change).
#   CARRY=.carry/s68b bash bench/kernel/sessions/s68-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run3
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -14
run_planner_check fp16 bf16
pack_logs
