#!/usr/bin/env bash
# Session 38, run 4 (nvidia-h200): does the pool layout cap the memory-bound prefix kernel? The same
# 134 MB of prefix K/V as 32/32 B16 P8192 (the nearest misses), laid out with 32, 8, 4 and 1 KV
# heads per token row (a head's 256-byte rows 8 KiB, 2 KiB, 1 KiB apart, or contiguous), timed by
# the prefix probe (wgmma, the issue's flush), and the plain read of 128 MiB after the same flush
# (prefixd_l2_probe) for reference. Binaries carried as $CARRY/bins.tar.xz.
#   CARRY=.carry/s38d bash bench/kernel/sessions/s38-layout.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s38-layout
for i in 1 2; do
  timeout 150 /tmp/b/prefixd_prefix_probe --kernel wgmma --iters 30 --shape 32/32:16:8192 --shape 8/8:16:32768 \
    --shape 4/4:16:65536 --shape 1/1:16:262144 --shape 32/8:16:32768 --shape 4/1:16:262144 \
    --csv "$OUT/layout$i.csv" >"$OUT/layout$i.txt" 2>&1
  echo "probe $i rc=$?"; grep -vE '^#' "$OUT/layout$i.txt"
done
timeout 100 /tmp/b/prefixd_l2_probe --mib 128 >"$OUT/l2.txt" 2>&1
echo "l2 probe rc=$?"; grep -vE '^#   ' "$OUT/l2.txt" | head -20
pack_logs
