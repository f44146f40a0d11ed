#!/usr/bin/env bash
# Session 11 run 3: prefix/cascade GPU tests, kernel grid with the paced (half page per tile, last tiles) suffix prefetch.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s11}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf .carry/s11/bins.tar.xz
cd /tmp/b
timeout 200 ./prefixd_gpu_tests --gtest_brief=1 --gtest_filter='*Cascade*:*Graph*:*Prefix*' >"$OUT/gpu-tests.txt" 2>&1; echo "gpu tests rc=$?"
tail -3 "$OUT/gpu-tests.txt"
timeout 250 ./prefixd_kernel_bench --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 \
  --variants nosp,default,sp8,sp16,sp36,splast,PREFIXD_SUFFIX_L2_PREFETCH_MIB=0 --csv "$OUT/grid.csv" >"$OUT/grid.txt" 2>&1; echo "grid rc=$?"
grep -A12 "# shape  " "$OUT/grid.txt" | head -12
