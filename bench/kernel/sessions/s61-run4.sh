#!/usr/bin/env bash
# Session 61, run 4 (nvidia-h200): the early decode by default (PREFIXD_EARLY_DECODE_PERCENT=auto:
# EarlyDecodeAutoShare, 0.85 x what the idle SMs stream at 55 GB/s each during the model's prefix
# part, where that part is >= 150 us and the share >= 10%; the TMA decode as the early grid).
# (1) its GPU tests, both sanitizers on the new one; (2) A/B against PREFIXD_EARLY_DECODE_PERCENT=0
# at B64/B256 P32768 (and B256 P8192 S32, where the rule leaves it), in one process; (3) the grid.
#   CARRY=.carry/s61c bash bench/kernel/sessions/s61-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run4
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaEarlyDecode.*:CudaGraph.EarlyDecode*:CudaCascade.SequentialTma*'
run_sanitizers 'CudaEarlyDecode.AutoShareWhereTheRuleTakesIt'
O=PREFIXD_EARLY_DECODE_PERCENT=0
RUN_TIMEOUT=240 run_variants auto "default,$O,default,$O" -d 128 --heads 32/32,32/8 -b 64,256 -p 32768 -s 32,256 --dtype fp16,bf16
RUN_TIMEOUT=60 run_variants auto8k "default,$O" -d 128 --heads 32/32,32/8 -b 256 -p 8192 -s 32 --dtype fp16
SHOW_LINES=22 show_variants auto auto8k | grep -v "^#$" | cut -c1-200
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -v "^NVIDIA"
pack_logs
