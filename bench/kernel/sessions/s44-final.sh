#!/usr/bin/env bash
# Session 44, run 4 (nvidia-h200): the balanced prefix grid as landed (item cost per head_dim,
# DefaultBalanceItemOverheadTiles: 0.8 / 2.5 / 5.2 tiles at 64 / 128 / 256; no L2 prefetch).
#   1. A/B in one process (--variants, interleaved per shape): the default (balanced) against
#      PREFIXD_PREFIX_BALANCE=0 on the issue's B256 P32768 rows, every head_dim, fp16 and bf16;
#   2. the planner check on the long-prefix grid shapes (B 64 / 256, P 8192 / 32768);
#   3. the whole GPU suite (launch/gpu-check.sh: 4 shards; its memcheck and racecheck subsets now
#      include the balanced-grid test).
#   CARRY=.carry/s44d bash bench/kernel/sessions/s44-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s44-final
RUN_TIMEOUT=150 run_variants ab-fp16 default,PREFIXD_PREFIX_BALANCE=0 --heads 32/8,32/32 -b 256 -p 32768 -s 32,256 \
  -d 64,128,256 --dtype fp16
RUN_TIMEOUT=100 run_variants ab-bf16 default,PREFIXD_PREFIX_BALANCE=0 --heads 32/8,32/32 -b 256 -p 32768 -s 32,256 \
  -d 64,128 --dtype bf16
SHOW_LINES=45 show_variants ab-fp16 ab-bf16
timeout 100 $B --planner-check --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16 -c 1 \
  >"$OUT/planner.txt" 2>&1
echo "planner rc=$? $(grep -E 'planner check: choice' "$OUT/planner.txt" | tr '\n' ' ')"
grep -E 'SLOW' "$OUT/planner.txt" | cut -c1-150
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh | tail -8
pack_logs
