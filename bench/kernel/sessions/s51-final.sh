#!/usr/bin/env bash
# Session 51, run 4 (nvidia-h200): the final binaries.
#   1. the step before this session (HEAD's binaries at its start, $CARRY_A: bench only) against
#      this build (the TMA decode's tiles with the heads as the mma's N; the planner's TMA decode on
#      its own k = 20-64), the builds in turn, twice: 32/8 D128 B128/B256 P8192/P16384/P32768
#      S128/S256 fp16, and the issue's grid rows at 32/8 B256 S256 in bf16;
#   2. launch/gpu-check.sh: the whole GPU suite, memcheck and racecheck.
#   CARRY=.carry/s51d CARRY_A=.carry/s51a-bench bash bench/kernel/sessions/s51-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s51-final
mkdir -p /tmp/A && tar -C /tmp/A -xJf "${CARRY_A:?}/bins.tar.xz"
run_build_rounds steps "A b" -d 128 --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16 --no-baseline -c 1
grep -ho "concurrent(k=[0-9]*[^)]*)" "$OUT"/steps-b1.txt | sort | uniq -c
run_build_rounds bf16 "A b" -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype bf16 --no-baseline -c 1
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -7
grep -hE "^\[  FAILED  \]" "$OUT"/check/*.log | sort -u | head -10
pack_logs
