#!/usr/bin/env bash
# Session 58, run 4 (nvidia-h200): the GQA-1 decode of short suffixes (32/32 B256 S32: the suffix
# part alone ~49 µs, 64% of the copy bandwidth, where its floor is 31 µs). 32/32 B256 P32768 S32
# misses its bar by 1.6-4% (run 3), P1024 S32 by 22%. Every existing decode setting against the
# default, in one process, on the four 32/32 B256 S32 shapes of the grid (P 1024 / 32768, fp16 /
# bf16): which, if any, moves the step.
#   CARRY=.carry/s58c bash bench/kernel/sessions/s58-s32.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s58-s32
RUN_TIMEOUT=250 run_variants s32 "default,w1,w2,w4,PREFIXD_DECODE_WARPS=8,persistent,persistent-items,PREFIXD_DECODE_PIPELINE=deep,PREFIXD_DECODE_PIPELINE=shallow,PREFIXD_DECODE_PIPELINE=narrow,noevict,noprefetch,nowarm,warm8,nopdl,default" \
  -d 128 --heads 32/32 -b 256 -p 1024,32768 -s 32 --dtype fp16,bf16
show_parts s32 | sort -k2,2 -k7,7 | head -80
SHOW_LINES=30 show_variants s32 | cut -c1-400 | head -24
pack_logs
