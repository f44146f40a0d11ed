#!/usr/bin/env bash
# Session 68, run 5 (nvidia-h200): the grid and head_dim rows with the read floors, now also the
# step's bytes as two launches overlapped the way the cascade's are (read_pdl_us: the second a
# programmatic dependent that reads, then waits for the first) — the least a two-kernel step pays.
#   CARRY=.carry/s68c bash bench/kernel/sessions/s68-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run5
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -16
pack_logs
