#!/usr/bin/env bash
# Session 52, run 1 (nvidia-h200; HEAD's binaries at the session's start, dee44cf): the TMA decode
# as 12 warps per CTA (PREFIXD_DECODE_TMA_WARPS=12) forced at the TMA decode's candidates k =
# 20..64 against the planner's step (8 warps) on the shapes of session 51's run 3 (32/8 D128 fp16,
# B 64-256, P 8192-32768, S 32-512), so that the cost model's rounds for 12 warps and the planner's
# choices come from measurements.
#   CARRY=.carry/s52a bash bench/kernel/sessions/s52-refit.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s52-refit
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1+PREFIXD_DECODE_TMA_WARPS=12
V=default; for k in 20 28 36 48 56 64; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=270 run_variants grid "$V" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=170 run_variants edge "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
show_parts grid edge
pack_logs
