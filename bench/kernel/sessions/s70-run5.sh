#!/usr/bin/env bash
# Session 70, run 5 (nvidia-h200): the nearest memory-bound misses of run 4 (32/32 B16 P8192 S32
# 47.3-47.5 µs against 46.8; B64 55.0 against 56.9-57.1) against existing settings: the one-warp
# decode CTA at their 512 / 2048 items (the rule's threshold lowered, and forced), the prefix K/V's
# L2 policy forced evict-first, the decode's evict-first off. Two processes each.
#   CARRY=.carry/s70b bash bench/kernel/sessions/s70-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run5
V="default,PREFIXD_DECODE_WARP_MIN_ITEMS=256,PREFIXD_DECODE_PIPELINE=warp,PREFIXD_SM90A_KV_POLICY=first,PREFIXD_DECODE_EVICT_FIRST=0"
for i in 1 2; do
  RUN_TIMEOUT=150 run_variants near$i "$V" --heads 32/32 -b 16,64 -p 8192 -s 32 --dtype fp16,bf16
done
SHOW_LINES=12 show_variants near1 near2
pack_logs
