#!/usr/bin/env bash
# Session 102, run 3, on .carry/s101a (the final code's binaries), asked for as nvidia-h200: on an
# H200 the bar checks of s102-run2.sh's H200 branch (the grid, the head_dim rows, the headline's k
# scan on the 16-bit default, ~150 s); on an H100 nothing (runs 1-2 did the H100's share), so that
# an H100 start costs only the start.
#   CARRY=.carry/s101a bash bench/kernel/sessions/s102-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s102-run3
if on_h200; then PLANNER_BEFORE_S=0 run_h200_bar_checks; else echo "not an H200: nothing run"; fi
echo "elapsed ${SECONDS} s"
pack_logs
