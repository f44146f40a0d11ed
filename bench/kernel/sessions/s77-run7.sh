#!/usr/bin/env bash
# Session 77, run 7 (nvidia-h200), the final binaries (run 5's): session 75's four planner checks
# (off the grid: fp16 32/8, 40/8, 64/8 B 1/37/200 P 304/5000/65536 S 1/100/1000; bf16 16/2, 24/8
# D64/256 B 3/100 P 1000/12344 S 7/300 page 8; and the default grid, fp16 and bf16) again, since
# the single-step decode rule changes the decode of items of <= 24 tokens at GQA 4 (S1, S7 here).
#   CARRY=.carry/s77c bash bench/kernel/sessions/s77-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run7
run_offgrid_planner_checks
pack_logs
