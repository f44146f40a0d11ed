#!/usr/bin/env bash
# Session 52, run 5 (nvidia-h200; run 4's final binaries): the 12-warp TMA decode forced at k = 40,
# 44, 52, 60 on session 51's shapes (32/8 D128 fp16). At 32/8 B256 the balanced prefix grid uses
# 8·⌊(132 − k)/8⌋ CTAs (one slot per row tile), so k = 48, 56, 64 leave 4 SMs idle that k = 52,
# 60 (and 44) give the decode; with run 3's table (k = 20-64) these say whether the planner's
# candidates should be aligned to the prefix grid's slots.
#   CARRY=.carry/s52d bash bench/kernel/sessions/s52-aligned.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s52-aligned
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
V=""; for k in 40 44 52 60; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=120 run_variants grid "${V#,}" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=90 run_variants edge "${V#,}" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
show_parts grid edge | awk '{sub(/PREFIXD_CONCURRENT_DECODE_SMS=/,"k="); sub(/\+PREFIXD_DECODE_PERSISTENT=1\+PREFIXD_DECODE_TMA=1/,""); print}'
pack_logs
