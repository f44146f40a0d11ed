#!/usr/bin/env bash
# Session 51, run 6 (nvidia-h200): the TMA decode as 12 warps per CTA with 2 ring stages each
# (PREFIXD_DECODE_TMA_WARPS=12, 168 registers) instead of 8 with 3: its GPU tests and
# compute-sanitizer with it, then the suffix part alone on k = 20/36/48 SMs and the planner's steps,
# 8 against 12 warps, one process per shape group.
#   CARRY=.carry/s51e bash bench/kernel/sessions/s51-warps.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-warps
export PREFIXD_DECODE_TMA_WARPS=12
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*NaNOutsideTheRequests*'
run_sanitizers 'CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms'
unset PREFIXD_DECODE_TMA_WARPS
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1; W=PREFIXD_DECODE_TMA_WARPS=12
V=""; for k in 20 36 48; do V="$V,$C=$k+$T,$C=$k+$T+$W"; done
RUN_TIMEOUT=60 run_variants rates "${V#,}" -d 128 --heads 32/8 -b 256 -p 1024 -s 128,256 --dtype fp16
RUN_TIMEOUT=80 run_variants steps default,$W -d 128 --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16
show_parts rates steps
pack_logs
