#!/usr/bin/env bash
# Session 51, run 1 (nvidia-h200): where the persistent TMA decode's warps spend their time. It is
# the decode beside the concurrent prefix (the planner's mode at 32/8 B256 P32768 S256) and streams
# ~61 GB/s per SM on 20 SMs where bulk copies reach ~88-105 (RESULTS.md sessions 25, 48).
#   1. Nsight Compute's PC sampling on one launch of the TMA decode on 20 SMs (32/8 D128 B256 P1024
#      S256 fp16), as built and with its arithmetic only (PREFIXD_DECODE_TMA_DIAG=2, WRONG results
#      on purpose): the stall totals and the SASS lines with the most samples;
#   2. the suffix part alone on k = 12/20/36 SMs: as built, copies only (DIAG=1), arithmetic only
#      (DIAG=2), at P1024 / P8192 / P32768 (the step's totals beside it).
# (As run, the Nsight Compute lines were written out here with an inline parser that read the wrong
# header row; they are device-setup.sh's run_ncu_stalls since, and the stall tables in
# bench/RESULTS.md were computed from run 1's sass-*.csv with bench/kernel/ncu_stalls.py.)
#   CARRY=.carry/s51a bash bench/kernel/sessions/s51-tma-profile.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-tma
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
for diag in 0 2; do
  run_ncu_stalls "prof-$diag" DecodeStreamTma 32768 $B -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16 \
    --no-baseline --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 \
    --variants "$C=20+$T+PREFIXD_DECODE_TMA_DIAG=$diag"
done
V=default
for k in 12 20 36; do V="$V,$C=$k+$T,$C=$k+$T+PREFIXD_DECODE_TMA_DIAG=1,$C=$k+$T+PREFIXD_DECODE_TMA_DIAG=2"; done
RUN_TIMEOUT=200 run_variants rates "$V" -d 128 --heads 32/8 -b 256 -p 1024,8192,32768 -s 256 --dtype fp16
show_parts rates
pack_logs
