#!/usr/bin/env bash
# Session 56, run 6 (nvidia-h200): the persistent TMA decode (12 warps, heads as the mma's N) as the
# decode of the plain sequential step on every SM (the `tma` preset), against the default
# one-CTA-per-item decode, where the decode is most of the step: 32/8 and 32/32, B64 and B256,
# P1024 and P8192, S32 and S256 (fp16).
#   CARRY=.carry/s56d bash bench/kernel/sessions/s56-tma-seq.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s56-tma-seq
RUN_TIMEOUT=300 run_variants seq "default,tma,tma+PREFIXD_DECODE_TMA_WARPS=8,default" \
  -d 128 --heads 32/8,32/32 -b 64,256 -p 1024,8192 -s 32,256 --dtype fp16
show_parts seq
SHOW_LINES=60 show_variants seq
pack_logs
