#!/usr/bin/env bash
# Session 88, run 9: the grid and head_dim rows on the H100 that came instead of an H200 (not a bar
# figure: the bar's card is an H200), this tree's final binaries (538407e: s87's refit, s88's
# long-tile rule), beside run 1's H100 grid of the tree before the tile rule (40 of 72).
#   CARRY=.carry/s88d bash bench/kernel/sessions/s88-run9.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run9
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v '^NVIDIA'
pack_logs
