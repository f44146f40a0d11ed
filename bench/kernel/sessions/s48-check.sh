#!/usr/bin/env bash
# Session 48, run 4 (nvidia-h200): run 3 found the merge kernel wrong at head_dim 64 with runs of
# more than 16 states (its weights came by a whole-warp shuffle that only the row's 16 lanes ran);
# the fix, and the planner's TMA decode limited to the plans where the mode was chosen before.
#   1. the GPU tests of the merge kernel, the concurrent mode and run 3's two failures, then
#      memcheck and racecheck on the merge and TMA-decode cases;
#   2. the planner's choices, the default against PREFIXD_CONCURRENT_DECODE_TMA=0 (the same plans
#      with the one-CTA-per-item decode), each shape timed once per variant in turn: 32/8 D128
#      fp16 B128 / B256 × P32768 S256 / S384, B256 P65536 S512, and B256 P32768 S256 bf16.
#   CARRY=.carry/s48d bash bench/kernel/sessions/s48-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s48-check
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*MergeStates*:*ConcurrentCascade*:*DecodeWarmupChangesNoResult*'
run_sanitizers '*MergeStates*:*ThePlansTmaDecode*'
V=default,PREFIXD_CONCURRENT_DECODE_TMA=0
RUN_TIMEOUT=120 run_variants p32k "$V" -d 128 --heads 32/8 -b 128,256 -p 32768 -s 256,384 --dtype fp16
RUN_TIMEOUT=60 run_variants p64k "$V" -d 128 --heads 32/8 -b 256 -p 65536 -s 512 --dtype fp16
RUN_TIMEOUT=60 run_variants bf16 "$V" -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype bf16
echo "== prefix / suffix / merge / total us (parts timed alone), wrong, variant"
for n in p32k p64k bf16; do
  awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-32s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$6,$7,$8,$NF,$13,$14,$15,$16,$31}' "$OUT/$n.csv"
  grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/$n.txt" | sort | uniq -c
done
pack_logs
