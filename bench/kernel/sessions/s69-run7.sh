#!/usr/bin/env bash
# Session 69, run 7 (nvidia-h200): the grid and the head_dim rows again on the final binaries
# (the one-warp decode rule; the diagnostic build of run 6 removed), for the cross-run spread of
# run 3's 23 of 72.
#   CARRY=.carry/s69f bash bench/kernel/sessions/s69-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/s69-run7} bash bench/kernel/issue4-grid.sh 2>&1 | grep -vE '^$' | tail -14
tar -C "${OUT:-/tmp/s69-run7}" -czf /tmp/s69-run7.tgz . && mv /tmp/s69-run7.tgz "${OUT:-/tmp/s69-run7}/all.tgz"
