#!/usr/bin/env bash
# Session 51, run 3 (nvidia-h200):
#   1. the TMA decode's warp-uniform box operands, per-lane K offsets and conditional O rescale
#      (this run's build; measured neutral, so reverted after it) against run 2's swap-AB build
#      ($CARRY_OLD, bench only): the suffix part alone on k = 20/36/48 SMs, the builds in turn, twice;
#   2. its GPU tests;
#   3. where the concurrent mode with the TMA decode pays: forced k = 20..64 against the planner's
#      step on 32/8 D128 shapes around the grid's (B 64-256, P 8192-32768, S 32-512), fp16, so that
#      the planner's rule and its rate model for that decode come from measurements.
#   CARRY=.carry/s51c CARRY_OLD=.carry/s51b-bench bash bench/kernel/sessions/s51-modes.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-modes
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
V=""; for k in 20 36 48; do V="$V,$C=$k+$T"; done
run_build_rounds rates "old b" -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16 --no-baseline --no-graph -c 1 \
  --variants "${V#,}"
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*NaNOutsideTheRequests*:*TmaDecode*'
V=default; for k in 20 28 36 48 56 64; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=250 run_variants grid "$V" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
RUN_TIMEOUT=150 run_variants edge "$V" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
show_parts grid edge
pack_logs
