#!/usr/bin/env bash
# Session 49, run 4 (nvidia-h200): the final binaries. The planner now re-chooses the concurrent
# mode's k at head_dim 256 with that head_dim's decode rate (plan.cc, ScoreConcurrentCascade;
# cost_model.h concurrent_sm_gbs_d256): k = 28 instead of 20 at 32/8 D256 B256 P32768 S256 (run 3:
# 494.6 against 507.3 µs) and at B256 P65536 S512 (never timed).
#   1. the GPU tests of the concurrent mode, the planner's plans and the merge kernel;
#   2. the planner's choice (default) against the old one forced (k = 20) and the sequential step:
#      32/8 D256 B256 P32768 S256 fp16 / bf16, B256 P65536 S512 fp16; then the headline 32/8 D128
#      B256 P32768 S256 fp16 / bf16 with the default once more.
#   CARRY=.carry/s49c bash bench/kernel/sessions/s49-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s49-final
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*Concurrent*:*MergeStates*:*Planner*:*Plan*'
grep -E "^\[  FAILED  \]" "$OUT/tests.log" | head -5
F=PREFIXD_CONCURRENT_DECODE_SMS
RUN_TIMEOUT=150 run_variants d256 "default,$F=20,$F=0" -d 256 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
RUN_TIMEOUT=150 run_variants d256long "default,$F=20,$F=0" -d 256 --heads 32/8 -b 256 -p 65536 -s 512 --dtype fp16
RUN_TIMEOUT=100 run_variants d128 default -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
show_parts d256 d256long d128
pack_logs
