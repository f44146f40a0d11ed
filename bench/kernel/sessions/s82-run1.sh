#!/usr/bin/env bash
# Session 82, run 1 (nvidia-h200): the planner item after the measured choice's change (the cascade
# always timed beside the model's choice, plain decode wherever its lower bound is in the band):
# session 75's four planner checks (81 fp16 and 32 bf16 shapes off the grid, the default grid in
# fp16 and bf16) on this tree's kernel bench.
#   CARRY=.carry/s82 bash bench/kernel/sessions/s82-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s82-run1
run_offgrid_planner_checks
pack_logs
