#!/usr/bin/env bash
# Session 53, run 2 (nvidia-h200): the binaries of the TmaDecodeWarps change (the TMA decode's
# warps decided by one rule for the launcher and the planner; behaviour unchanged):
#   1. the memory-bound near misses of the grid (32/32 B16 and B64 at P8192, 32/8 B256 P1024 S256)
#      under the benchmark's variants, to see whether any existing setting gains there;
#   2. the whole GPU suite, then memcheck and racecheck on their default subsets (launch/gpu-check.sh).
#   CARRY=.carry/s53b bash bench/kernel/sessions/s53-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s53-check
V="default,narrow,wide,nopdl,conc16,conc32,persistent,nowarm,PREFIXD_PREFIX_TARGET_ITEMS=120,PREFIXD_MIN_PREFIX_CHUNK=1024"
RUN_TIMEOUT=110 run_variants near32 "$V" -d 128 --heads 32/32 -b 16,64 -p 8192 -s 32,256 --dtype fp16
RUN_TIMEOUT=60 run_variants near8 "$V" -d 128 --heads 32/8 -b 256 -p 1024 -s 256 --dtype fp16
SHOW_LINES=40 show_variants near32 near8
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  PREFIXD_TIMEOUT_MEMCHECK=150 PREFIXD_TIMEOUT_RACECHECK=150 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -12
pack_logs
