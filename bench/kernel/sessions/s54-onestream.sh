#!/usr/bin/env bash
# Session 54, run 1 (nvidia-h200): the concurrent step on one stream (PREFIXD_CONCURRENT_STEP,
# cuda_backend.h) against the two-stream step, same plans:
#   1. the planner's shapes where it takes the concurrent mode (32/8 D128 fp16, B128/256,
#      P8192-32768, S128/256): default (two streams), pdl (the decode a programmatic dependent of
#      the prefix, whose CTAs trigger at entry; the merge kernel after it), pdl-merge (the TMA
#      decode's own ⊕ after one wait), and one after the other (k = 0);
#   2. the forced TMA decode at k = 28-48 (B256 P8192 S256) and 20-36 (P32768 S256), each form;
#   3. the CUDA-graph replay of the step, default against pdl-merge;
#   4. the concurrent, TMA decode and graph GPU tests; memcheck and racecheck on the new ones.
#   CARRY=.carry/s54a bash bench/kernel/sessions/s54-onestream.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-onestream
S=PREFIXD_CONCURRENT_STEP C=PREFIXD_CONCURRENT_DECODE_SMS T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=150 run_variants plan "default,$S=pdl,$S=pdl-merge,$C=0" \
  -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
V=""; for k in 28 36 43 48; do V="$V,$C=$k+$T,$C=$k+$T+$S=pdl,$C=$k+$T+$S=pdl-merge"; done
RUN_TIMEOUT=120 run_variants forced8k "${V#,}" -d 128 --heads 32/8 -b 256 -p 8192 -s 256 --dtype fp16
V=""; for k in 20 28 36; do V="$V,$C=$k+$T,$C=$k+$T+$S=pdl,$C=$k+$T+$S=pdl-merge"; done
RUN_TIMEOUT=120 run_variants forced32k "${V#,}" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
show_parts plan forced8k forced32k
for v in streams pdl-merge; do
  PREFIXD_CONCURRENT_STEP=$v timeout 100 $B -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 128,256 --dtype fp16 \
    --no-baseline -c 1 --csv "$OUT/graph-$v.csv" >"$OUT/graph-$v.txt" 2>&1
  echo "graph $v rc=$? $(grep 'wrong results' "$OUT/graph-$v.txt")"
  grep -iE "graph|^fp16" "$OUT/graph-$v.txt" | tail -8
done
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*CudaConcurrent*:*CudaGraph*:*TmaDecode*:*OneStream*-*DecodeOnExactlyTheFreeSms*'
run_sanitizers '*ThePlansTmaDecodeRunsOnTheKSms*:*CudaGraph.OneStream*'
pack_logs
