#!/usr/bin/env bash
# Session 53, run 3 (nvidia-h200): the persistent TMA decode with the next item's descriptor and
# queries loaded after the item's first copy is issued (before: ahead of it, so that each item's
# copies started only after that DRAM round trip), against the binaries before it ($CARRY_OLD,
# 5d44b68; its kernel benchmark only):
#   1. the builds in turn, twice, the TMA decode forced at k = 36 (B256 P8192) and 20 (B256 P32768),
#      S 128/256/512 (32/8 D128 fp16): the decode alone on k SMs and the step;
#   2. this build's forced-k table on session 52's shapes (as bench/kernel/sessions/s52-final.sh, run 3 there:
#      the planner's step, the step one after the other, k = 20..64), for the model's rounds;
#   3. the TMA decode's and the concurrent step's GPU tests (8 shards), memcheck and racecheck on the
#      plan's TMA decode test and the TMA decode variants.
#   CARRY=.carry/s53c CARRY_OLD=.carry/s53b-old bash bench/kernel/sessions/s53-ahead.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s53-ahead
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
A="-d 128 --heads 32/8 -b 256 --dtype fp16 -s 128,256,512 --no-baseline --no-graph -c 1"
export PREFIXD_DECODE_PERSISTENT=1 PREFIXD_DECODE_TMA=1
PREFIXD_CONCURRENT_DECODE_SMS=36 run_build_rounds k36 "old b" -p 8192 $A
PREFIXD_CONCURRENT_DECODE_SMS=20 run_build_rounds k20 "old b" -p 32768 $A
unset PREFIXD_DECODE_PERSISTENT PREFIXD_DECODE_TMA
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
V="default,$C=0"; for k in 20 28 36 48 56 64; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=150 run_variants grid "$V" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=120 run_variants edge "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
show_parts grid edge | grep -v "SMS=[0-9][0-9]"
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=220 \
  PREFIXD_GPU_FILTER='*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*NaNOutsideTheRequests*:*TmaDecode*:*CudaConcurrent*:*CudaDecodeVariantTest*tma*' \
  PREFIXD_MEMCHECK_FILTER='*ThePlansTmaDecodeRunsOnTheKSms*:*CudaDecodeVariantTest*persistent_tma*' \
  PREFIXD_RACECHECK_FILTER='*ThePlansTmaDecodeRunsOnTheKSms*:*CudaDecodeVariantTest*persistent_tma*' \
  PREFIXD_TIMEOUT_MEMCHECK=90 PREFIXD_TIMEOUT_RACECHECK=90 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -6
pack_logs
