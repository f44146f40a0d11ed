#!/usr/bin/env bash
# Session 69, run 9 (nvidia-h200): the one-warp CTA rule from fewer items (PREFIXD_DECODE_WARP_MIN_ITEMS
# = 1024) on the GQA-1 S32 grid rows it does not take by default: the late decode after the early
# one at 32/32 B256 P32768 S32 (the nearest compute-bound miss), and B64 (2048 items) and B16 (512).
#   CARRY=.carry/s69h bash bench/kernel/sessions/s69-run9.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run9
RUN_TIMEOUT=120 run_variants low "default,PREFIXD_DECODE_WARP_MIN_ITEMS=1024" --heads 32/32 -b 256 -p 32768 -s 32 \
  --dtype fp16,bf16
RUN_TIMEOUT=120 run_variants small "default,PREFIXD_DECODE_WARP_MIN_ITEMS=1024" --heads 32/32 -b 16,64 -p 1024,8192 -s 32 \
  --dtype fp16
SHOW_LINES=30 show_variants low small
pack_logs
