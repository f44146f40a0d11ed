#!/usr/bin/env bash
# Session 54, run 2 (nvidia-h200): run 1's comparison after two changes to the one-stream step:
# the TMA decode's ⊕ (pdl-merge) loads a warp's item descriptors 32 at a time and 20 float4 of
# states per lane at once (run 1: ~3 µs per item, four L2 latencies); and on one stream the TMA
# decode's CTAs let the merge kernel launch at their entry (a programmatic dependent; PREFIXD_MERGE_PDL=0
# turns that off):
#   1. the planner's concurrent shapes: default (two streams), pdl, pdl with PREFIXD_MERGE_PDL=0,
#      pdl-merge;
#   2. the forced TMA decode at k = 36-48 (B256 P8192 S256) and 20 (P32768 S256), each form;
#   3. the one-stream and TMA decode GPU tests; memcheck and racecheck on them.
#   CARRY=.carry/s54b bash bench/kernel/sessions/s54-merge.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-merge
S=PREFIXD_CONCURRENT_STEP C=PREFIXD_CONCURRENT_DECODE_SMS T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=150 run_variants plan "default,$S=pdl,$S=pdl+PREFIXD_MERGE_PDL=0,$S=pdl-merge" \
  -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
V=""; for k in 36 43 48; do V="$V,$C=$k+$T,$C=$k+$T+$S=pdl,$C=$k+$T+$S=pdl-merge"; done
RUN_TIMEOUT=120 run_variants forced8k "${V#,}" -d 128 --heads 32/8 -b 256 -p 8192 -s 256 --dtype fp16
RUN_TIMEOUT=120 run_variants forced32k "$C=20+$T,$C=20+$T+$S=pdl,$C=20+$T+$S=pdl-merge" \
  -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
show_parts plan forced8k forced32k
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*CudaConcurrent*:*CudaGraph*:*TmaDecode*:*OneStream*-*DecodeOnExactlyTheFreeSms*'
run_sanitizers '*ThePlansTmaDecodeRunsOnTheKSms*:*CudaGraph.OneStream*'
pack_logs
