#!/usr/bin/env bash
# Session 78, run 5 (nvidia-h200; not lent in session 78, for a next session, after run 4): the
# planner item on session 78's decode epilogue. The epilogue changed the time of every decode
# (cascade and plain alike: S32 steps up to 3.3 µs faster), which the cost model, fitted before it,
# does not know; the measured choice times near ties, so session 75's four checks (off the grid:
# fp16 32/8, 40/8, 64/8 B 1/37/200 P 304/5000/65536 S 1/100/1000; bf16 16/2, 24/8 D64/256 B 3/100
# P 1000/12344 S 7/300 page 8; the default grid, fp16 and bf16) say whether any choice is now over
# 5% slower than the better of the cascade and plain decode (s77 run 7: worst 1.023).
#   CARRY=.carry/s78d bash bench/kernel/sessions/s78-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s78-run5
run_offgrid_planner_checks
pack_logs
