#!/usr/bin/env bash
# Session 88, run 8: the grid and head_dim rows on the bar's card, this tree's binaries (session 87's
# refit of the concurrent TMA step and session 88's long-tile rule; neither timed on an H200 yet),
# issue4-grid.sh (run_bar_grid); on any other card it stops at once (a non-bar grid is not run).
# Carry .carry/s88d (ignored, local; its rebuild steps in s88-run6.sh).
#   CARRY=.carry/s88d bash bench/kernel/sessions/s88-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run8
run_bar_grid
pack_logs
