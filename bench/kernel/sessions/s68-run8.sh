#!/usr/bin/env bash
# Session 68, run 8 (nvidia-h200): the grid and head_dim rows with every read yardstick on the final
# binary (its read-floor regions capture their byte counts by value; runs 1-7 referenced two of
# them through locals of a finished block), to confirm runs 1-6's reads.
#   CARRY=.carry/s68f bash bench/kernel/sessions/s68-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run8
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -16
grep -h "read floors" "$OUT/grid/grid.txt"
pack_logs
