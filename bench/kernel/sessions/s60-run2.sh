#!/usr/bin/env bash
# Session 60, run 2 (nvidia-h200): the table the planner's TMA-decode mode is checked against
# (tests/unit/kernels/cost_model_test.cc, session 52's run 3) re-measured with narrow slots in the
# prefix stream (PREFIXD_PREFIX_STREAM_NARROW=1) and two more k (14, 16; run 1: k = 14 took 32/8
# B256 P32768 S256 from 262.8 to 254.4 µs fp16): per shape, one process, the step one after the
# other, the planner's default, and the TMA decode forced at k = 14-64 (32/8 D128 fp16, session
# 51's 20 shapes); first the GPU oracle test of the balanced grids with its narrow-slot cases.
#   CARRY=.carry/s60b bash bench/kernel/sessions/s60-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run2
run_gpu_tests 'CudaCascade.BalancedPrefixGridMatchesTheOracle:CudaMergeStates.RunBoundsByArithmeticGiveTheBitsOfTheTable'
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_CONCURRENT_DECODE_TMA=force+PREFIXD_PREFIX_STREAM_NARROW=1
V="$C=0,default"; for k in 14 16 20 28 36 48 56 64; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=280 run_variants grid "$V" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=200 run_variants edge "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
SHOW_LINES=24 show_variants grid edge | cut -c1-420
pack_logs
