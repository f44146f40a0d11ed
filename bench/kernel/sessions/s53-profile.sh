#!/usr/bin/env bash
# Session 53, run 6 (nvidia-h200): where the persistent TMA decode's per-item time goes (the cost
# model's 2.8 µs per round of items besides their bytes; bench/NOTES-fused.md, session 53): Nsight
# Compute's PC sampling of one launch of the 12-warp decode on k = 36 SMs (32/8 D128 B256 P1024
# S256 fp16, 2048 items of 16 tiles), its SASS lines grouped by how often they ran per item.
#   CARRY=.carry/s53b-old bash bench/kernel/sessions/s53-profile.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s53-profile
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
run_ncu_stalls prof DecodeStreamTma 2048 $B -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16 \
  --no-baseline --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 --variants "$C=36+$T"
pack_logs
