#!/usr/bin/env bash
# Session 49, run 3 (nvidia-h200): how many SMs the concurrent step's decode should have. The
# planner scores k ∈ {20, 28} with a cost model whose prefix time steps with the CTA count; at
# head_dim 256 it takes k = 20 (its decode at the model's 40 GB/s per SM still ends after the
# prefix), where session 45 measured k = 28 faster (503.3 against 514.8 µs).
#   1. 32/8 D256 B256 P32768 S256, fp16 and bf16: the default (the planner's k) against the mode
#      forced at k = 20, 24, 28, 32 (one-CTA-per-item decode, as at head_dim 256 there is no TMA one);
#   2. 32/8 D128 B256 P32768 S256 fp16: the default (k = 20, persistent TMA decode) against the
#      TMA decode forced at k = 16, 18, 22, 24;
#   3. the merge A/B of run 2 again on the concurrent shapes (default against
#      PREFIXD_MERGE_ROWS_PER_WARP=1), a second sample of its noise.
#   CARRY=.carry/s49b bash bench/kernel/sessions/s49-k.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s49-k
F=PREFIXD_CONCURRENT_DECODE_SMS
RUN_TIMEOUT=200 run_variants d256 "default,$F=20,$F=24,$F=28,$F=32" -d 256 --heads 32/8 -b 256 -p 32768 -s 256 \
  --dtype fp16,bf16
T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=150 run_variants d128 "default,$F=16+$T,$F=18+$T,$F=22+$T,$F=24+$T" -d 128 --heads 32/8 -b 256 \
  -p 32768 -s 256 --dtype fp16
RUN_TIMEOUT=120 run_variants merge default,PREFIXD_MERGE_ROWS_PER_WARP=1 -d 128 --heads 32/8 -b 256 -p 32768 \
  -s 256 --dtype fp16,bf16
show_parts d256 d128 merge
pack_logs
