#!/usr/bin/env bash
# A/B of two builds in one device call (nvidia-h200): some GPU tests of the new build, optionally
# the prefix probe's timeline, then the foundation grid (32/8 and 32/32 heads, B 64/256,
# P 8192/32768, S 256, fp16) with the previous build (old) and the new one alternating, twice.
# Binaries carried as the tarball $BINS: prefixd_gpu_tests, prefixd_kernel_bench (new),
# prefixd_kernel_bench_old, and prefixd_prefix_probe when PROBE=1. Logs: $OUT.
# Session 11 (bench/kernel/results/s11/):
#   run 5, decode page lookups by lane:  BINS=.carry/s11/bins5.tar.xz FILTER='*Decode*:*Cascade*:*Graph*:*Baseline*:*Planner*'
#   run 6, first Q ahead of the K/V:     BINS=.carry/s11/bins6.tar.xz FILTER='*Prefix*:*Cascade*:*Graph*' PROBE=1
#   run 8, item groups beside the items: BINS=.carry/s11/bins8.tar.xz FILTER='*Prefix*:*Cascade*:*Graph*:*Fused*:*Backend*' PROBE=1
set -uo pipefail
cd "$(dirname "$0")/../.."
BINS=${BINS:?set BINS to the carried tarball}
OUT=${OUT:-/tmp/ab-old-new}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$BINS"
cd /tmp/b
timeout 250 ./prefixd_gpu_tests --gtest_brief=1 --gtest_filter="${FILTER:-*}" >"$OUT/gpu-tests.txt" 2>&1
echo "gpu tests rc=$?"; tail -3 "$OUT/gpu-tests.txt"
if [ "${PROBE:-0}" = 1 ]; then
  timeout 60 ./prefixd_prefix_probe --kernel wgmma --flush memset --timeline >"$OUT/probe.txt" 2>&1
  grep -E "timeline|^wgmma" "$OUT/probe.txt" | head -6
fi
for i in 1 2; do for b in old new; do
  exe=./prefixd_kernel_bench; [ $b = old ] && exe=./prefixd_kernel_bench_old
  timeout 100 $exe --heads 32/8,32/32 -b 64,256 -p 8192,32768 -s 256 --no-baseline -c 1 --csv "$OUT/grid-$b$i.csv" >"$OUT/grid-$b$i.txt" 2>&1
  echo "== $b $i rc=$?"; grep -E "^\s+fp16 +16 " "$OUT/grid-$b$i.txt" | awk -F'|' '{print $1 "|" $2 "|" $4}' | head -8
done; done
