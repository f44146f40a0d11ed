#!/usr/bin/env bash
# Session 43, run 8 (nvidia-h200): the session's last binaries (commit 7d123fa: the K/V tile length
# in one place, PrefixKvTileTokens; the device code as run 1's).
#   1. the whole GPU suite (launch/gpu-check.sh: 4 shards, memcheck and racecheck subsets);
#   2. the planner check at head_dim 64 (the cost model keeps its 128-token unit there while the
#      kernel's tiles are 192 tokens: does any choice come out > 5% slower than the best layout?);
#   3. the issue's head_dim 64 / 256 rows once more, with the benchmark's 1 s pause after the ceilings.
#   CARRY=.carry/s43d bash bench/kernel/sessions/s43-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-final
timeout 150 $B --planner-check --heads 32/8,32/32 -b 16,64,256 -p 128,1024,8192,32768 -s 32,256 -d 64 --dtype fp16 -c 1 \
  >"$OUT/planner-d64.txt" 2>&1
echo "planner d64 rc=$? $(grep -E 'worst|over 5|planner check' "$OUT/planner-d64.txt" | tail -4 | tr '\n' ' ')"
timeout 100 $B -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 \
  --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$? $(grep 'wrong results' "$OUT/dims.txt")"
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh | tail -8
pack_logs
