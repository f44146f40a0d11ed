#!/usr/bin/env bash
# Session 11 run 1: GPU tests, prefix timeline (Q by TMA vs cp.async), kernel grid with the
# Q-TMA and suffix-prefetch variants.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s11}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf .carry/s11/bins.tar.xz
cd /tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | head -1
timeout 300 ./prefixd_gpu_tests --gtest_brief=1 >"$OUT/gpu-tests.txt" 2>&1; echo "gpu tests rc=$?"
tail -5 "$OUT/gpu-tests.txt"
for q in 1 0; do
  PREFIXD_SM90A_Q_TMA=$q timeout 60 ./prefixd_prefix_probe --kernel wgmma --flush memset --timeline >"$OUT/probe-q$q.txt" 2>&1
  echo "== Q_TMA=$q"; grep -E "timeline|^wgmma" "$OUT/probe-q$q.txt" | head -6
done
timeout 200 ./prefixd_kernel_bench --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
  --variants default,qcp,nosp,sp12,sp36,splast --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1; echo "grid rc=$?"
grep -A40 "# variants" "$OUT/grid.txt" | head -30
