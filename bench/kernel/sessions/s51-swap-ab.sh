#!/usr/bin/env bash
# Session 51, run 2 (nvidia-h200): the TMA decode's tiles with the query heads as the mma's N
# (SwapAbDecodeTile, the new default; PREFIXD_DECODE_TMA_SWAP_AB=0 the old MmaDecodeTile).
#   1. the GPU tests of the TMA decode (both tile forms), compute-sanitizer on the plan's TMA decode;
#   2. Nsight Compute's PC sampling on one launch of the new kernel on 20 SMs (as in run 1);
#   3. the suffix part alone on k = 12/20/36 SMs, new and old, and new arithmetic only (DIAG=2);
#   4. the steps: the planner's choice and forced k at 32/8 D128 B256 P8192/P32768 S256, fp16 and
#      bf16, new against old.
# (Its Nsight Compute lines are device-setup.sh's run_ncu_stalls since the run, which wrote them out
# here with the same ncu options less the memory section.)
#   CARRY=.carry/s51b bash bench/kernel/sessions/s51-swap-ab.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-swap
C=PREFIXD_CONCURRENT_DECODE_SMS; T=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1; OLD=PREFIXD_DECODE_TMA_SWAP_AB=0
GPU_TESTS_TIMEOUT=250 run_gpu_tests '*DecodeOnExactlyTheFreeSms*:*ThePlansTmaDecode*:*NaNOutsideTheRequests*:*CudaDecodeVariantTest*'
run_sanitizers 'CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms'
run_ncu_stalls prof DecodeStreamTma 32768 $B -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16 --no-baseline \
  --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 --variants "$C=20+$T"
V=""
for k in 12 20 36; do V="$V,$C=$k+$T,$C=$k+$T+$OLD,$C=$k+$T+PREFIXD_DECODE_TMA_DIAG=2"; done
RUN_TIMEOUT=150 run_variants rates "${V#,}" -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16
V=default,$OLD
for k in 12 16 20 28 36 48; do V="$V,$C=$k+$T"; done
RUN_TIMEOUT=250 run_variants steps "$V" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16
show_parts rates steps
pack_logs
