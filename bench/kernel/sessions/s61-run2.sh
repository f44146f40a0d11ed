#!/usr/bin/env bash
# Session 61, run 2 (nvidia-h200): run 1 had the persistent TMA decode on every SM as the
# sequential decode at GQA 1 faster only at 32/32 B16 P8192 S256 (67.0 -> 64.8 us: one item per
# warp, 43 CTAs), slower at B64 and B256; and the early grid as the TMA decode at 35% of the suffix
# tokens -3.0 / -3.6 us at 32/32 B256 P32768 S32 (fp16 / bf16), +72 at 50% (the early items
# outlast the prefix grid). (1) that decode at B16/B32 over P and S, GQA 1 and 2, head_dim 64 and
# 128, with 12 and 8 warps, against the default; (2) the early share at 30-40%.
#   CARRY=.carry/s61a bash bench/kernel/sessions/s61-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run2
P=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=200 run_variants seq "default,$P,$P+PREFIXD_DECODE_TMA_WARPS=8" \
  -d 128 --heads 32/32 -b 16,32 -p 1024,8192,32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=100 run_variants seq2 "default,$P,$P+PREFIXD_DECODE_TMA_WARPS=8" \
  -d 128 --heads 32/16,32/32 -b 16 -p 8192 -s 128,512 --dtype fp16
RUN_TIMEOUT=60 run_variants seq64 "default,$P,$P+PREFIXD_DECODE_TMA_WARPS=8" \
  -d 64 --heads 32/32 -b 16 -p 8192 -s 256 --dtype fp16
E=PREFIXD_EARLY_DECODE_PERCENT
RUN_TIMEOUT=120 run_variants early "default,$E=30,$E=35,$E=40,default" -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16
SHOW_LINES=26 show_variants seq seq2 seq64 early | grep -v "^#$" | cut -c1-200
show_parts early | tail -2
pack_logs
