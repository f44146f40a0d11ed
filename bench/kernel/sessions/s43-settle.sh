#!/usr/bin/env bash
# Session 43, run 4 (nvidia-h200): run 3's first-shape check again with the 1 s idle after the
# ceilings (--settle-ms, new default 1000). Binaries ($CARRY/bins.tar.xz): run 2's kernels, the probe
# and benchmark with --settle-ms.
#   1. the probe, three processes, the same shape three times in each (default settle), then one
#      with --settle-ms 0 (as before);
#   2. the benchmark, fp16 32/32 D64 B256 P32768 S32 and S256, twice (default settle), once with 0.
#   CARRY=.carry/s43c bash bench/kernel/sessions/s43-settle.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-settle
A=(--shape 32/8:256:32768 --shape 32/8:256:32768 --shape 32/8:256:32768)
i=0
for settle in 1000 1000 1000 0; do
  i=$((i + 1))
  timeout 120 /tmp/b/prefixd_prefix_probe --kernel wgmma --iters 20 --settle-ms $settle "${A[@]}" >"$OUT/probe-$i-s$settle.txt" 2>&1
  echo "probe settle $settle rc=$? $(grep -E '^wgmma' "$OUT/probe-$i-s$settle.txt" | awk '{printf "%s ", $12}')"
done
for settle in 1000 1000 0; do
  i=$((i + 1))
  timeout 100 $B -d 64 --heads 32/32 -b 256 -p 32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1 \
    --settle-ms $settle >"$OUT/bench-$i-s$settle.txt" 2>&1
  echo "bench settle $settle rc=$? prefix/total: $(grep -E '^ +fp16' "$OUT/bench-$i-s$settle.txt" | awk -F'|' '{split($2,a," "); printf "%s/%s ", a[1], a[4]}')"
done
pack_logs
