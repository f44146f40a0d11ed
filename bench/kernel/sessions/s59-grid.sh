#!/usr/bin/env bash
# Session 59, run 7 (nvidia-h200): the issue's grid and head_dim rows on the final binaries
# (issue4-grid.sh; the merge kernel's run bounds by arithmetic since run 2).
#   CARRY=.carry/s59e bash bench/kernel/sessions/s59-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-grid
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
pack_logs
