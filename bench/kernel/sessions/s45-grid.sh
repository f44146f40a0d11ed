#!/usr/bin/env bash
# Session 45, run 1 (nvidia-h200): the issue's grid (72 shapes) and its head_dim 64 / 256 rows (16)
# on the binaries of HEAD, with the CUDA-graph replay of the whole step (the issue asks for it;
# sessions 43-44 timed the grid with --no-graph), then the prefix probe's refusal of a malformed
# flag on the GPU machine.
#   CARRY=.carry/s45a bash bench/kernel/sessions/s45-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s45-grid
for dt in fp16 bf16; do
  timeout 200 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype $dt --no-baseline -c 1 \
    --csv "$OUT/grid-$dt.csv" >"$OUT/grid-$dt.txt" 2>&1
  echo "grid $dt rc=$? $(grep 'wrong results' "$OUT/grid-$dt.txt")"
done
timeout 150 $B -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline -c 1 \
  --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$? $(grep 'wrong results' "$OUT/dims.txt")"
/tmp/b/prefixd_prefix_probe --balance-overhead 2.5x >"$OUT/probe-refusal.txt" 2>&1
echo "probe refusal rc=$? $(cat "$OUT/probe-refusal.txt")"
pack_logs
for f in "$OUT"/grid-fp16.csv "$OUT"/grid-bf16.csv "$OUT"/dims.csv; do
  /usr/bin/python3 bench/kernel/fused_floor_table.py "$f" --log "${f%.csv}.txt" | tail -1
done
