#!/usr/bin/env bash
# One device call (nvidia-h200): the performance issue's grid with the default backend — heads
# 32/32 and 32/8, B 16/64/256, P 1024/8192/32768, S 32/256, fp16 and bf16, D 128; plus head_dim 64
# and 256 at B = 256, P = 32768, S = 256 — and each against the issue's fused floor
# (fused_floor_table.py; the ceilings of the same run), with each shape's plain-read floor
# (--read-floor, since session 68). Since session 77 each step is planned as the worker plans it on
# CUDA (--measured-choice: the cost model's near ties timed once per shape; before, the model's own
# plan: session 77 run 1 timed both, 24 of 72 either way, the measured choice's steps median −0.4%,
# −11% to +1.5%). Binaries carried as $CARRY/bins.tar.xz.
#   session 12 (bench/kernel/results/s12/run12-*): CARRY=.carry/s12a
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh issue4-grid
timeout 400 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 --no-baseline -c 1 --read-floor \
  --measured-choice --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1
echo "grid rc=$?"
timeout 150 $B --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16,bf16 --no-baseline -c 1 --read-floor \
  --measured-choice --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$?"
for t in grid dims; do
  python3 bench/kernel/fused_floor_table.py "$OUT/$t.csv" --log "$OUT/$t.txt" >"$OUT/$t-fused-floor.md" 2>&1
  echo "== $t: $(grep -ciE 'within|yes' "$OUT/$t-fused-floor.md") lines mention the bar"; tail -5 "$OUT/$t-fused-floor.md"
done
