#!/usr/bin/env bash
# Session 88, run 8: the grid and head_dim rows on the bar's card, this tree's binaries (session 87's
# refit of the concurrent TMA step and session 88's long-tile rule; neither timed on an H200 yet),
# issue4-grid.sh; on any other card it stops at once (no device time spent on a non-bar grid).
# Carry .carry/s88d (ignored, local; its rebuild steps in s88-run6.sh).
#   CARRY=.carry/s88d bash bench/kernel/sessions/s88-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: no grid"; exit 0
fi
source bench/kernel/device-setup.sh s88-run8
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v '^NVIDIA'
grep -E '^ +(fp16|bf16) +16 +32/8 +128 +256 +32768 +256 ' "$OUT/grid/grid.txt" | cut -c1-110
pack_logs
