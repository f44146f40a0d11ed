#!/usr/bin/env bash
# Session 68, run 1 (nvidia-h200): the issue's grid and head_dim rows (bench/kernel/issue4-grid.sh)
# with each shape's plain-read floor (--read-floor: one read of the shape's K/V bytes, same method),
# then the L2 probe's table of load forms (what the flush's dirty lines cost a read, by size).
#   CARRY=.carry/s68a bash bench/kernel/sessions/s68-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run1
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -14
# The L2 probe's table (results/s68/run1-l2probe.txt) came from this script's first call, whose grid
# stopped on the read floor's sink bug (since fixed); that call also ran:
#   timeout 60 /tmp/b/prefixd_l2_probe --mib 8,16,32,64,128,256 >"$OUT/l2probe.txt" 2>&1

pack_logs
