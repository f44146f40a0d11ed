#!/usr/bin/env bash
# Session 61, run 1 (nvidia-h200): the persistent TMA decode built for groups of 1 and 2 heads
# (its swap-AB tiles pad the mma's N of 8 heads as groups of 4 did) and the early decode's grid as
# that kernel on the SMs the prefix grid leaves idle (PREFIXD_EARLY_DECODE_TMA, on by default; the
# one-item kernel streamed ~22 GB/s per SM at GQA 1, session 59). (1) their GPU tests and both
# sanitizers on the early decode's graph test and the concurrent TMA test; (2) the early decode's
# share at 32/32 B64/B256 P32768 S32 with the TMA grid against the default and the old grid;
# (3) the TMA decode on every SM as the sequential decode at GQA 1 (32/32 P8192 rows).
#   CARRY=.carry/s61a bash bench/kernel/sessions/s61-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run1
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*EarlyDecode*:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms:Variants/CudaDecodeVariantTest.*:CudaCascade.NaNOutside*'
run_sanitizers 'CudaGraph.EarlyDecodeStepReplaysCorrectly:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms'
E=PREFIXD_EARLY_DECODE_PERCENT
RUN_TIMEOUT=200 run_variants early "default,$E=15+PREFIXD_EARLY_DECODE_TMA=0,$E=15,$E=25,$E=35,$E=50" \
  -d 128 --heads 32/32 -b 64,256 -p 32768 -s 32 --dtype fp16,bf16
P=PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=150 run_variants seq "default,$P" -d 128 --heads 32/32 -b 16,64,256 -p 8192 -s 32,256 --dtype fp16
show_parts early seq | sort -k1,1 -k4,4 -k5,5
SHOW_LINES=14 show_variants early seq | cut -c1-300
pack_logs
