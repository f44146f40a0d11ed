#!/usr/bin/env bash
# Session 60, run 1 (nvidia-h200): (1) the GPU test session 59 left unrun after its last refactor
# (CudaMergeStates.RunBoundsByArithmeticGiveTheBitsOfTheTable) and the new narrow-slot case of the
# balanced prefix grid's oracle test; (2) narrow slots in the prefix stream
# (PREFIXD_PREFIX_STREAM_NARROW, prefix_balance.h): with the decode forced on k = 14, 16, 18 SMs
# the prefix grid gets 118, 116, 114 CTAs (14 whole slots of 8 + 4 / 2 leftover), against the
# planner's default (k = 20 on 112 CTAs at 32/8 B256 P32768 S256) and k = 16 without them.
#   CARRY=.carry/s60a bash bench/kernel/sessions/s60-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run1
run_gpu_tests 'CudaMergeStates*:CudaCascade.BalancedPrefixGridMatchesTheOracle:CudaConcurrent*'
K='PREFIXD_CONCURRENT_DECODE_TMA=force+PREFIXD_CONCURRENT_DECODE_SMS'
N='PREFIXD_PREFIX_STREAM_NARROW=1'
RUN_TIMEOUT=280 run_variants narrow "default,$K=16,$K=16+$N,$K=14+$N,$K=18+$N,default" \
  -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=280 run_variants narrow-other "default,$K=28,$K=32+$N,$K=24+$N,default" \
  -d 128 --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16
show_parts narrow narrow-other | sort -k1,1 -k2,2 -k4,4 -k5,5
SHOW_LINES=20 show_variants narrow narrow-other | cut -c1-400
pack_logs
