#!/usr/bin/env bash
# Session 59, run 3 (nvidia-h200): the early decode (PREFIXD_EARLY_DECODE_PERCENT, early_decode.h;
# bench/NOTES-fused.md, session 59): its GPU tests (every cascade case at 30% and 100%, parts
# against the whole step, a CUDA-graph replay), memcheck and racecheck on them, then the step
# against the default at shares of 15-100% of the finished suffixes' tokens, in one process, on the
# shapes whose prefix grid leaves SMs idle and that miss their bars by little (32/32 B256 P32768
# S32; 32/32 B16 / B64 P8192 S32, B16 P8192 S256), and 32/8 B256 P32768 S32 (met) for what it costs.
#   CARRY=.carry/s59c bash bench/kernel/sessions/s59-early.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-early
run_gpu_tests 'CudaEarlyDecode.*:CudaGraph.*:CudaMergeStates.*'
run_sanitizers 'CudaGraph.EarlyDecode*'
V="default,PREFIXD_EARLY_DECODE_PERCENT=15,PREFIXD_EARLY_DECODE_PERCENT=30,PREFIXD_EARLY_DECODE_PERCENT=45,PREFIXD_EARLY_DECODE_PERCENT=100,default"
RUN_TIMEOUT=200 run_variants big "$V" -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32 --dtype fp16,bf16
RUN_TIMEOUT=150 run_variants small "$V" -d 128 --heads 32/32 -b 16,64 -p 8192 -s 32,256 --dtype fp16,bf16
SHOW_LINES=14 show_variants big small | cut -c1-330
pack_logs
