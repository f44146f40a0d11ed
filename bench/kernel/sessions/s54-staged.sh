#!/usr/bin/env bash
# Session 54, run 3 (nvidia-h200): run 2's comparison (bench/kernel/sessions/s54-merge.sh) with the TMA
# decode's ⊕ (pdl-merge) staged: rounds of items whose runs fit the warp's ring copied in by
# cp.async, one wait per round (run 2: ~2.5 µs per item with its loads in registers);
#   1. the planner's concurrent shapes: default (two streams), pdl, pdl-merge;
#   2. the forced TMA decode at k = 36 and 43 (B256 P8192 S256) and 20 (P32768 S256), each form;
#   3. the one-stream and TMA decode GPU tests; memcheck and racecheck on them.
#   CARRY=.carry/s54c bash bench/kernel/sessions/s54-staged.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-staged
S=PREFIXD_CONCURRENT_STEP C=PREFIXD_CONCURRENT_DECODE_SMS T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=150 run_variants plan "default,$S=pdl,$S=pdl-merge" \
  -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
V=""; for k in 36 43; do V="$V,$C=$k+$T,$C=$k+$T+$S=pdl,$C=$k+$T+$S=pdl-merge"; done
RUN_TIMEOUT=120 run_variants forced8k "${V#,}" -d 128 --heads 32/8 -b 256 -p 8192 -s 256 --dtype fp16
RUN_TIMEOUT=120 run_variants forced32k "$C=20+$T,$C=20+$T+$S=pdl,$C=20+$T+$S=pdl-merge" \
  -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
show_parts plan forced8k forced32k
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*CudaConcurrent*:*CudaGraph*:*TmaDecode*:*OneStream*-*DecodeOnExactlyTheFreeSms*'
run_sanitizers '*ThePlansTmaDecodeRunsOnTheKSms*:*CudaGraph.OneStream*:*OneStreamAtAnyDecodeSmCount*'
pack_logs
