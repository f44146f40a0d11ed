#!/usr/bin/env bash
# Session 67, run 4 (nvidia-h200): the issue's grid and head_dim rows (bench/kernel/issue4-grid.sh)
# on the final binaries (the merge of runs of 5-8 states in one latency).
#   CARRY=.carry/s67d bash bench/kernel/sessions/s67-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s67-run4
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -12
pack_logs
