#!/usr/bin/env bash
# Session 60, run 6 (nvidia-h200): the issue's grid and head_dim rows on the final binaries
# (issue4-grid.sh), and the planner's concurrent choices in them.
#   CARRY=.carry/s60e bash bench/kernel/sessions/s60-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-grid
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/grid/grid.txt" "$OUT/grid/dims.txt" | sort | uniq -c
pack_logs
