#!/usr/bin/env bash
# Session 63, run 6 (nvidia-h200): the issue's whole grid and head_dim rows re-measured on session
# 61's final binaries (commit e43cba6; no kernel changed since), for the run-to-run spread: runs 4-5
# read two of session 61's misses under their bars (bf16 32/32 B256 P32768 S32, bf16 32/8 B256
# P32768 S256).
#   CARRY=.carry/s63a bash bench/kernel/sessions/s63-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/out}/grid bash bench/kernel/issue4-grid.sh
