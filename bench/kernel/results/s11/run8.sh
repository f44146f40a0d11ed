#!/usr/bin/env bash
# Session 11 run 8: each prefix item's group copied beside the items (one dependent load fewer at every CTA start). Prefix and
# cascade GPU tests (and the fused kernel's, which shares the item walk), the probe's timeline,
# then the grid: the previous binary (old: commit 64a3c90) and this one (new), alternating.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s11}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf .carry/s11/bins8.tar.xz
cd /tmp/b
timeout 200 ./prefixd_gpu_tests --gtest_brief=1 --gtest_filter='*Prefix*:*Cascade*:*Graph*:*Fused*:*Backend*' >"$OUT/gpu-tests.txt" 2>&1; echo "gpu tests rc=$?"
tail -3 "$OUT/gpu-tests.txt"
timeout 60 ./prefixd_prefix_probe --kernel wgmma --flush memset --timeline >"$OUT/probe.txt" 2>&1
grep -E "timeline|^wgmma" "$OUT/probe.txt" | head -6
for i in 1 2; do for b in old new; do
  exe=./prefixd_kernel_bench; [ $b = old ] && exe=./prefixd_kernel_bench_old
  timeout 100 $exe --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 --csv "$OUT/grid-$b$i.csv" >"$OUT/grid-$b$i.txt" 2>&1
  echo "== $b $i rc=$?"; grep -E "^\s+fp16 +16 " "$OUT/grid-$b$i.txt" | awk -F'|' '{print $1 "|" $2 "|" $4}' | head -8
done; done
