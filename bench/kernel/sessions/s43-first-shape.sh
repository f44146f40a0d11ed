#!/usr/bin/env bash
# Session 43, run 3 (nvidia-h200): is the first shape of a probe or benchmark process timed slow?
# (Sessions 42-43: the probe's first shape, head_dim 128 fp16 32/8 B256 P32768, read 214-266 µs
# where the grid reads 215; the benchmark's first head_dim row, fp16 32/32 D64 S32, 162-178 µs of
# prefix where the next row reads 155.) Binaries ($CARRY/bins.tar.xz): run 2's.
#   1. the probe, three processes, the same shape three times in each; then two with 200 warm-ups;
#   2. the benchmark, fp16 32/32 D64 B256 P32768 S32 and S256, twice with 5 warm-ups, twice with 200.
#   CARRY=.carry/s43b bash bench/kernel/sessions/s43-first-shape.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-first-shape
A=(--shape 32/8:256:32768 --shape 32/8:256:32768 --shape 32/8:256:32768)
i=0
for w in 5 5 5 200 200; do
  i=$((i + 1))
  timeout 120 /tmp/b/prefixd_prefix_probe --kernel wgmma --iters 20 --warmup $w "${A[@]}" >"$OUT/probe-$i-w$w.txt" 2>&1
  echo "probe warmup $w rc=$? $(grep -E '^wgmma' "$OUT/probe-$i-w$w.txt" | awk '{printf "%s ", $12}')"
done
for w in 5 5 200 200; do
  i=$((i + 1))
  timeout 100 $B -d 64 --heads 32/32 -b 256 -p 32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1 -w $w \
    >"$OUT/bench-$i-w$w.txt" 2>&1
  echo "bench warmup $w rc=$? prefix/total: $(grep -E '^ +fp16' "$OUT/bench-$i-w$w.txt" | awk -F'|' '{split($2,a," "); printf "%s/%s ", a[1], a[4]}')"
done
pack_logs
