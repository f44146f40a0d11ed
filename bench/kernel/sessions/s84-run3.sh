#!/usr/bin/env bash
# Session 84, run 3 (nvidia-h200, after runs 1-2, same carry): the issue's grid and head_dim rows
# on this tree (bench/kernel/issue4-grid.sh: the measured choice, read floors, the fused-floor
# tables); the kernels are session 81's, the planner has session 83's ScheduleKey.
#   CARRY=.carry/s84 bash bench/kernel/sessions/s84-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s84-run3
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
pack_logs
