#!/usr/bin/env bash
# Session 74, run 1 (nvidia-h200): what the merge kernel costs inside the concurrent step, to price
# a merge inside the step's own launch (the prefix and decode grids as one cooperative launch, a
# grid barrier, then the merge on every SM) before building it. `--without-merge` times, interleaved
# with the step, the step's prefix and decode parts as the step runs them (the two grids side by
# side, their join) without the merge kernel; total − that is the merge's share of the step.
# Shapes: the concurrent plans of the grid and the head_dim rows (32/8 B256 P32768 S256 at head_dim
# 128 and 256, B256 P8192 S256), fp16 and bf16, two processes.
#   CARRY=.carry/s74a bash bench/kernel/sessions/s74-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s74-run1
common=(--heads 32/8 -b 256 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 --without-merge)
for r in 1 2; do
  timeout 200 $B "${common[@]}" -p 32768 -d 128,256 --csv "$OUT/p32768-r$r.csv" >"$OUT/p32768-r$r.txt" 2>&1
  echo "p32768 round $r rc=$?"
  timeout 100 $B "${common[@]}" -p 8192 -d 128 --csv "$OUT/p8192-r$r.csv" >"$OUT/p8192-r$r.txt" 2>&1
  echo "p8192 round $r rc=$?"
done
# dtype heads D B P S | prefix suffix merge total | without-merge (total - without)
for f in "$OUT"/p*-r?.txt; do
  echo "# $(basename "$f")"
  grep -E '^ +(fp16|bf16) ' "$f" | awk '{
    wm = "nan"; for (i = 1; i <= NF; ++i) if ($i == "without-merge") wm = $(i + 1);
    printf "%s %s D%s B%s P%s S%s | pre %s suf %s mer %s tot %s | without-merge %s (%.1f)\n",
           $1, $3, $4, $5, $6, $7, $9, $10, $11, $12, wm, $12 - wm }'
done
grep -h -A1 "ceilings measured now" "$OUT"/p32768-r1.txt | head -3
pack_logs
