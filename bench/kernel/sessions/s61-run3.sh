#!/usr/bin/env bash
# Session 61, run 3 (nvidia-h200): run 2 had the persistent TMA decode on every SM as the cascade's
# sequential decode faster at 32/32 B16-32 S128-512 (steps -1.0 to -3.6 us; slower at B64/B256,
# S32, GQA 2 S128, head_dim 64); now the backend takes it there by default (SequentialTmaDecodeWarps:
# GQA 1, head_dim 128, items of 128-512 tokens, 12 warps up to 6 items per SM, 8 up to 8;
# PREFIXD_SEQUENTIAL_TMA=0 turns it off). (1) its GPU test, the early decode's and the TMA decode's
# tests, both sanitizers on the new test; (2) A/B of the rule at 32/32 B16/B32 P1024-32768 S256
# (and S32, where it does not apply), in one process; (3) the issue's grid on these binaries.
#   CARRY=.carry/s61b bash bench/kernel/sessions/s61-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run3
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaCascade.SequentialTma*:*EarlyDecode*:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms:Variants/CudaDecodeVariantTest.*'
run_sanitizers 'CudaCascade.SequentialTma*'
S=PREFIXD_SEQUENTIAL_TMA=0
RUN_TIMEOUT=200 run_variants rule "default,$S,default,$S" -d 128 --heads 32/32 -b 16,32 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16
SHOW_LINES=30 show_variants rule | grep -v "^#$" | cut -c1-200
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v "^NVIDIA"
pack_logs
