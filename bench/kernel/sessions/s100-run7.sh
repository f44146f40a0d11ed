#!/usr/bin/env bash
# Session 100, run 7, on .carry/s100d (the final code: 16-bit concurrent states by default, the
# measured choice's 8-warp TMA-decode candidate; plan version 6). (1) The whole GPU suite (8
# shards, no sanitizer). (2) On an H200 (the bar's card): the bar grid and head_dim rows, the
# headline's k scan, and while under 400 s the planner checks (run_h200_bar_checks). On an H100:
# the planner checks on the grid's shapes, fp16 and bf16 (the measured choice with its new
# candidate against plain decode and the cascade).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run7
run_whole_suite
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PLANNER_BEFORE_S=400 run_h200_bar_checks
else
  run_planner_check fp16 bf16
fi
echo "elapsed ${SECONDS} s"
pack_logs
