#!/usr/bin/env bash
# Session 52, run 3 (nvidia-h200; the build with the TMA decode at 12 warps by default and the
# model's rounds for them, commit 99b6d7e): on session 51's shapes (32/8 D128
# fp16, B 64-256, P 8192-32768, S 32-512) the planner's step (12 warps), the same with 8 warps (the
# 8-warp model: the planner as before), the step one after the other, and the 12-warp TMA decode
# forced at k = 20..64, one process per shape; the bf16 grid rows; then the TMA decode's and the
# concurrent step's GPU tests, and memcheck and racecheck on the plan's TMA decode test.
#   CARRY=.carry/s52c bash bench/kernel/sessions/s52-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s52-final
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
V="default,PREFIXD_DECODE_TMA_WARPS=8,$C=0"; for k in 20 28 36 48 56 64; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=150 run_variants grid "$V" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=120 run_variants edge "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
RUN_TIMEOUT=60 run_variants bf16 "default,PREFIXD_DECODE_TMA_WARPS=8" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype bf16
show_parts grid edge bf16 | grep -v "SMS=[0-9][0-9]"
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*NaNOutsideTheRequests*:*TmaDecode*:*CudaConcurrent*'
run_sanitizers '*ThePlansTmaDecodeRunsOnTheKSms*'
pack_logs
