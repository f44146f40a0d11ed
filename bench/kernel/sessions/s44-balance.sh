#!/usr/bin/env bash
# Session 44, run 1 (nvidia-h200): the balanced prefix grid (PlanOptions::balance_prefix_ctas,
# prefixd/kernels/prefix_balance.h): where a plan's prefix items are one wave that leaves SMs idle
# (128 items on 132 SMs at B256 / B64 P32768), each (KV head, row tile) pair's tail runs on them.
# Binaries ($CARRY/bins.tar.xz): this build.
#   1. A/B in one process per shape set (--variants, interleaved per shape): the default (balanced)
#      against PREFIXD_PREFIX_BALANCE=0 (round-robin, as before) and two other item-overhead guesses,
#      on the shapes where it applies (P32768, B64 and B256, every head_dim, both head pairs);
#   2. the planner check on the long-prefix grid shapes (choice against plain decode, ≤ 5%);
#   3. the new GPU test (the balanced chains and the capped grid's round-robin against the oracle).
#   CARRY=.carry/s44a bash bench/kernel/sessions/s44-balance.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s44-balance
# Variant order (the table truncates names to 24 characters): default, off, overhead 0.3, overhead 1.2 tiles.
V=default,PREFIXD_PREFIX_BALANCE=0,PREFIXD_PREFIX_BALANCE_OVERHEAD=30,PREFIXD_PREFIX_BALANCE_OVERHEAD=120
RUN_TIMEOUT=150 run_variants ab-d128 $V --heads 32/8,32/32 -b 64,256 -p 32768 -s 32,256 -d 128 --dtype fp16
RUN_TIMEOUT=150 run_variants ab-dims $V --heads 32/8,32/32 -b 256 -p 32768 -s 32,256 -d 64,256 --dtype fp16
RUN_TIMEOUT=100 run_variants ab-bf16 default,PREFIXD_PREFIX_BALANCE=0 --heads 32/8,32/32 -b 256 -p 32768 -s 32,256 \
  -d 64,128 --dtype bf16
SHOW_LINES=40 show_variants ab-d128 ab-dims ab-bf16
timeout 120 $B --planner-check --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16 -c 1 \
  >"$OUT/planner.txt" 2>&1
echo "planner rc=$? $(grep -E 'planner check: choice' "$OUT/planner.txt" | tr '\n' ' ')"
grep -E 'SLOW' "$OUT/planner.txt" | cut -c1-150
run_gpu_tests '*Balanced*'
pack_logs
