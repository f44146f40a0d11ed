#!/usr/bin/env bash
# Session 63, run 1 (nvidia-h200), on session 61's final binaries (commit e43cba6):
# (1) the early decode (PREFIXD_EARLY_DECODE_PERCENT, the TMA decode as the early grid) at shapes the
#     automatic share leaves alone (predicted prefix part < 180 us): P1024 (64-128 prefix CTAs, up to
#     68 idle SMs) and P8192, both head layouts, B16-256, S32/256, fp16; each share against the
#     default (auto = 0 there), in one process;
# (2) the sequential TMA decode's step at 32/32 B16 P8192/P1024 S256 in four processes (the ~5 us
#     bimodality of s61 run 4), default against PREFIXD_SEQUENTIAL_TMA=0.
#   CARRY=.carry/s63a bash bench/kernel/sessions/s63-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s63-run1
E=PREFIXD_EARLY_DECODE_PERCENT
RUN_TIMEOUT=300 run_variants early "default,$E=30,$E=60,$E=100" -d 128 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192 -s 32,256 --dtype fp16
Q=PREFIXD_SEQUENTIAL_TMA=0
for i in 1 2 3 4; do
  RUN_TIMEOUT=60 run_variants seq$i "default,$Q,default,$Q" -d 128 --heads 32/32 -b 16 -p 1024,8192 -s 256 --dtype fp16
done
SHOW_LINES=40 show_variants early | grep -v "^#$" | cut -c1-220
SHOW_LINES=12 show_variants seq1 seq2 seq3 seq4 | grep -v "^#$" | cut -c1-200
pack_logs
