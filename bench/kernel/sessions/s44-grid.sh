#!/usr/bin/env bash
# Session 44, run 5 (nvidia-h200): the session's final binaries (the balanced prefix grid, taken at
# head_dim 64 B256 P32768 by the 2% minimum gain; the tiny-prefix rule at head_dim 128 only, from
# session 43, not yet re-timed on a GPU).
#   1. the issue's grid, fp16 and bf16 (72 shapes), and its head_dim 64 / 256 rows (16);
#   2. the planner check at head_dim 64 (P 128-32768, as session 43's run 10).
#   CARRY=.carry/s44e bash bench/kernel/sessions/s44-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s44-grid
for dt in fp16 bf16; do
  timeout 150 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype $dt --no-baseline --no-graph -c 1 \
    --csv "$OUT/grid-$dt.csv" >"$OUT/grid-$dt.txt" 2>&1
  echo "grid $dt rc=$? $(grep 'wrong results' "$OUT/grid-$dt.txt")"
done
timeout 100 $B -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 \
  --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$? $(grep 'wrong results' "$OUT/dims.txt")"
grep -E '^ +(fp16|bf16) .*  64   256' "$OUT/dims.txt" | cut -c1-110
timeout 150 $B --planner-check --heads 32/8,32/32 -b 16,64,256 -p 128,256,1024,8192,32768 -s 32,256 -d 64 --dtype fp16 -c 1 \
  >"$OUT/planner-d64.txt" 2>&1
echo "planner d64 rc=$? $(grep -E 'planner check: choice' "$OUT/planner-d64.txt" | tr '\n' ' ')"
grep -E 'SLOW' "$OUT/planner-d64.txt" | cut -c1-150
pack_logs
