#!/usr/bin/env bash
# Session 89, run 7: the grid and head_dim rows on the bar's card, the final binaries (1b26ae0:
# session 87's refit, session 88's long-tile rule, session 89's candidates; no grid plan changed by
# the last), run_bar_grid; on any other card it stops at once (a non-bar grid is not run).
# Carry .carry/s89c (ignored, local; its rebuild steps in s89-run6.sh's header).
#   CARRY=.carry/s89c bash bench/kernel/sessions/s89-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run7
run_bar_grid
pack_logs
