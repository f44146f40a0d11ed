#!/usr/bin/env bash
# Session 52, run 4 (nvidia-h200): the final build (its planner: the 12-warp TMA decode, the
# model's rounds, prefix scale and interference for it) against HEAD's at the session's start
# (dee44cf, $CARRY_OLD: its kernel benchmark only), the builds in turn, twice, one process per
# build and shape list: session 51's 32/8 D128 shapes (fp16) and the bf16 grid rows; then the GPU
# tests of the planner's concurrent choice.
#   CARRY=.carry/s52d CARRY_OLD=.carry/s52d-old bash bench/kernel/sessions/s52-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s52-check
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
A="--no-baseline --no-graph -c 1"
run_build_rounds grid "old b" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16 $A
run_build_rounds edge "old b" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16 $A
run_build_rounds bf16 "old b" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype bf16 $A
grep -h "concurrent(k=" "$OUT"/grid-b1.txt "$OUT"/edge-b1.txt "$OUT"/bf16-b1.txt | awk '{print $1, $5, $6, $7, $(NF-3), $(NF-2), $(NF-1)}'
GPU_TESTS_TIMEOUT=120 run_gpu_tests '*ThePlannersChoiceRunsConcurrently*:*ThePlansTmaDecodeRunsOnTheKSms*:*NaNOutsideTheRequests*:*CostModel*'
pack_logs
