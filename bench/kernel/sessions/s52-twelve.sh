#!/usr/bin/env bash
# Session 52, run 2 (nvidia-h200; the build with the TMA decode at 12 warps by default and the cost
# model's rounds for them): the TMA decode's and the concurrent step's GPU tests (12 warps now, and
# 8 by PREFIXD_DECODE_TMA_WARPS=8), memcheck and racecheck on the plan's TMA decode test; then on
# session 51's shapes (32/8 D128 fp16, B 64-256, P 8192-32768, S 32-512) the planner's step, the
# same with 8 warps (the 8-warp model: the planner as before), the step one after the other, and
# the 12-warp TMA decode forced at k = 20..64, all in one process per shape.
#   CARRY=.carry/s52b bash bench/kernel/sessions/s52-twelve.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s52-twelve
F='*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*NaNOutsideTheRequests*:*TmaDecode*:*Concurrent*'
GPU_TESTS_TIMEOUT=200 run_gpu_tests "$F"
mv "$OUT/tests.log" "$OUT/tests12.log"
PREFIXD_DECODE_TMA_WARPS=8 GPU_TESTS_TIMEOUT=120 run_gpu_tests '*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*TmaDecode*'
mv "$OUT/tests.log" "$OUT/tests8.log"
run_sanitizers '*ThePlansTmaDecodeRunsOnTheKSms*:*DecodeOnExactlyTheFreeSms*'
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
V="default,PREFIXD_DECODE_TMA_WARPS=8,$C=0"; for k in 20 28 36 48 56 64; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=200 run_variants grid "$V" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=150 run_variants edge "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
show_parts grid edge | grep -v "SMS=[0-9][0-9]"
pack_logs
