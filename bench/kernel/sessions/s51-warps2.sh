#!/usr/bin/env bash
# Session 51, run 7 (nvidia-h200; run 6's binaries, the call made inline as
# `bash -c '. bench/kernel/device-setup.sh s51-w2; ...'` with these lines): the TMA decode as 12
# warps per CTA forced at k = 28/36/40/48 against the planner's step (8 warps) at 32/8 D128 B256
# P8192/P16384 S256, fp16.
#   CARRY=.carry/s51e bash bench/kernel/sessions/s51-warps2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-w2 >/dev/null
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1; W=PREFIXD_DECODE_TMA_WARPS=12
RUN_TIMEOUT=90 run_variants w2 "default,$C=28+$T+$W,$C=36+$T+$W,$C=40+$T+$W,$C=48+$T+$W" -d 128 --heads 32/8 -b 256 \
  -p 8192,16384 -s 256 --dtype fp16
show_parts w2
