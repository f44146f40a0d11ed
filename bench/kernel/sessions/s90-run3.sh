#!/usr/bin/env bash
# Session 90, run 3: the grid and head_dim rows again on an H200 (run_bar_grid; a second read of
# run 1's 26 of 72, whose headline ratios hang on the run's own GEMM ceiling), on run 1's binaries.
#   CARRY=.carry/s90a bash bench/kernel/sessions/s90-run3.sh   (.carry/s90a: see s90-run2.sh)
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s90-run3
run_bar_grid
pack_logs
