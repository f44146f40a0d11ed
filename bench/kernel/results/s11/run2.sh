#!/usr/bin/env bash
# Session 11 run 2: GPU tests, kernel grid with the paced suffix-prefetch variants.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s11}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf .carry/s11/bins.tar.xz
cd /tmp/b
timeout 300 ./prefixd_gpu_tests --gtest_brief=1 >"$OUT/gpu-tests.txt" 2>&1; echo "gpu tests rc=$?"
tail -3 "$OUT/gpu-tests.txt"
timeout 250 ./prefixd_kernel_bench --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
  --variants default,nosp,sp12,sp36,splast,stages3,stages3+nosp --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1; echo "grid rc=$?"
grep -A12 "# shape  " "$OUT/grid.txt" | head -12
