#!/usr/bin/env bash
# Session 18, one device call (nvidia-h200): short suffixes (S = 32, P = 1024, every B, both head
# pairs, fp16): decode-kernel variants ($VARIANTS) under the method's write flush, then the default
# under each flush (write, clean, none), to see what bounds a short item's decode.
# Binaries carried as $CARRY/bins.tar.xz. Logs: $OUT.
#   run 2: CARRY=.carry/s18a VARIANTS=default,w1,w4
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s18-short
shapes="--heads 32/8,32/32 -b 16,64,256 -p 1024 -s 32,64"
timeout 150 $B $shapes --no-baseline --no-graph -c 1 --variants "${VARIANTS:-default,w1,w4}" --csv "$OUT/variants.csv" \
  >"$OUT/variants.txt" 2>&1
echo "== variants rc=$?"; grep -A60 "^# shape" "$OUT/variants.txt" | cut -c1-200 | grep -v "^#  "; grep "wrong results" "$OUT/variants.txt"
for f in write clean none; do
  timeout 60 $B $shapes --flush $f --no-baseline --no-graph -c 1 --csv "$OUT/flush-$f.csv" >"$OUT/flush-$f.txt" 2>&1
  echo "== flush $f rc=$?"; grep -E "empty|^ +fp16" "$OUT/flush-$f.txt" | cut -c1-110
done
