#!/usr/bin/env bash
# Session 24, one device call (nvidia-h200): the narrow-item candidate at head_dim 64, which no
# calibration has timed (the planner takes it on 27 of these 72 shapes with the H200 model): the
# planner's choice as committed against the same without the candidate (PREFIXD_NARROW_TILE_ROWS=0),
# interleaved per shape. Binaries carried as $CARRY/bins.tar.xz.
#   run 12: CARRY=.carry/s24d
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s24-d64
timeout 400 $B --heads 32/32,32/8,64/8 -b 16,64,256 -p 512,1024,8192,32768 -s 32,256 -d 64 --dtype fp16 \
  --no-baseline --no-graph -c 1 --variants default,PREFIXD_NARROW_TILE_ROWS=0 --csv "$OUT/d64.csv" >"$OUT/d64.txt" 2>&1
echo "d64 rc=$? $(grep 'wrong results' "$OUT/d64.txt")"
python3 bench/kernel/variant_diff.py "$OUT/d64.csv" | head -3
