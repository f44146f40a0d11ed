#!/usr/bin/env bash
# Session 43, run 2 (nvidia-h200): the issue's grid on the kept build (head_dim 64 on 192-token
# tiles; head_dim 128's kernels unchanged since session 41), and two head_dim-64 probes of it.
# Binaries ($CARRY/bins.tar.xz): this build; prefixd_prefix_probe_x = this build with the ring
# stages as warp-uniform values at head_dim 64 too (UNIFORM_STAGES; 6% slower with 128-token tiles,
# session 40).
#   1. the prefix probe, new x, twice, head_dim 64; then new on the deep ring (--kernel wgmma-s3:
#      4 stages at head_dim 64), twice;
#   2. the issue's 72 grid shapes (head_dim 128, fp16 and bf16) and the 16 head_dim 64 / 256 rows,
#      once each, CSVs for bench/kernel/fused_floor_table.py.
#   CARRY=.carry/s43b bash bench/kernel/sessions/s43-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-grid
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:64:32768:64 --shape 32/8:256:32768:64:bf16)
run_probe_rounds "new x" --kernel wgmma --iters 20 "${SHAPES[@]}"
for i in 1 2; do
  timeout 120 /tmp/b/prefixd_prefix_probe --kernel wgmma-s3 --iters 20 "${SHAPES[@]}" >"$OUT/probe-s3-$i.txt" 2>&1
  echo "probe s3 $i rc=$? $(grep -E '^wgmma' "$OUT/probe-s3-$i.txt" | awk '{printf "%s ", $12}')"
done
for dt in fp16 bf16; do
  timeout 150 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype $dt --no-baseline --no-graph -c 1 \
    --csv "$OUT/grid-$dt.csv" >"$OUT/grid-$dt.txt" 2>&1
  echo "grid $dt rc=$? $(grep 'wrong results' "$OUT/grid-$dt.txt")"
done
timeout 100 $B -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 \
  --csv "$OUT/dims.csv" >"$OUT/dims.txt" 2>&1
echo "dims rc=$? $(grep 'wrong results' "$OUT/dims.txt")"
pack_logs
