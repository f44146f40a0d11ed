#!/usr/bin/env bash
# Session 43, run 10 (nvidia-h200): head_dim 64's K/V tile chosen per plan (ChoosePrefixKvTileTokens:
# 128-token tiles for plans of short items, 192 otherwise; run 9 had the 192-token tiles put the
# cascade at P = 128 / 256 1-1.5 µs behind the 128-token ones, and 32/8 B256 P128 S32 6.1% behind
# plain decode). Binaries ($CARRY/bins.tar.xz): this build.
#   1. the planner check at head_dim 64 (P 128-32768, as runs 8-9);
#   2. the issue's head_dim 64 / 256 rows (192-token tiles still chosen there);
#   3. the whole GPU suite (36 new cases: the 128-token tiles forced on every head_dim-64 scenario).
#   CARRY=.carry/s43e bash bench/kernel/sessions/s43-tile128.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-tile128
timeout 150 $B --planner-check --heads 32/8,32/32 -b 16,64,256 -p 128,256,1024,8192,32768 -s 32,256 -d 64 --dtype fp16 -c 1 \
  >"$OUT/planner-d64.txt" 2>&1
echo "planner d64 rc=$? $(grep -E 'planner check: choice' "$OUT/planner-d64.txt" | tr '\n' ' ')"
grep -E 'SLOW' "$OUT/planner-d64.txt" | cut -c1-150
timeout 100 $B -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 \
  --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$? $(grep 'wrong results' "$OUT/dims.txt")"
grep -E '^ +(fp16|bf16) .*  64   256' "$OUT/dims.txt" | cut -c1-110
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh | tail -8
pack_logs
