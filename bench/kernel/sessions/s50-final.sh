#!/usr/bin/env bash
# Session 50, run 3 (nvidia-h200): the final binaries.
#   1. the fused kernel (PREFIXD_FUSED=1, opt-in): run 1's build (the suffix warps zero a partial
#      step's V rows in shared memory), run 2's (masks in registers on every step) and this one
#      (masks only on an item's partial last step), alternated twice, at 32/8 B64/B256 P8192/P32768
#      S256 (no partial steps) and S100 (a partial last step per item);
#   2. launch/gpu-check.sh: the whole GPU suite, memcheck and racecheck (their filters now hold the
#      fused merge cases that reported hazards in run 1 and the fused NaN case).
#   CARRY=.carry/s50c CARRY_A=.carry/s50a CARRY_B=.carry/s50b bash bench/kernel/sessions/s50-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s50-final
for x in A B; do v=CARRY_$x; mkdir -p /tmp/$x && tar -C /tmp/$x -xJf "${!v:?}/bins.tar.xz"; done
run_build_rounds fused "A B b" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 100,256 --dtype fp16 --no-baseline \
  --no-graph -c 1 --variants PREFIXD_FUSED=1
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  PREFIXD_TEST_SHARDS=6 bash launch/gpu-check.sh 2>&1 | tail -7
grep -hE "^\[  FAILED  \]" "$OUT"/check/*.log | sort -u | head -10
pack_logs
