#!/usr/bin/env bash
# Session 51, run 5 (nvidia-h200), the final binaries (run 4's): device-setup.sh's new
# run_ncu_stalls on the TMA decode (20 SMs), and the planner's step at shapes of run 3's table it was
# not timed at as the planner's choice (32/8 D128 B256 P8192 S512: k = 64 on the CPU; B128/B256
# P32768 S512), against the mode off (PREFIXD_CONCURRENT_DECODE_SMS=0) and the TMA decode's own
# candidates off (PREFIXD_CONCURRENT_DECODE_TMA=0: the session's start's choices but for its rounds).
#   CARRY=.carry/s51d bash bench/kernel/sessions/s51-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-check
run_ncu_stalls tma DecodeStreamTma 32768 $B -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16 --no-baseline \
  --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0 \
  --variants PREFIXD_CONCURRENT_DECODE_SMS=20+PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1
RUN_TIMEOUT=120 run_variants s512 default,PREFIXD_CONCURRENT_DECODE_SMS=0,PREFIXD_CONCURRENT_DECODE_TMA=0 \
  -d 128 --heads 32/8 -b 128,256 -p 8192,32768 -s 512 --dtype fp16
show_parts s512
pack_logs
