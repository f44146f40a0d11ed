#!/usr/bin/env bash
# Session 17: the grid's small shapes (S = 32 everywhere, P = 1024 everywhere; fp16) under backend
# variants, interleaved per shape (prefixd_kernel_bench --variants), in one device call (nvidia-h200).
# Binaries carried as $CARRY/bins.tar.xz (prefixd_kernel_bench; sm_90 + sm_90a). Logs: $OUT.
#   run 1: CARRY=.carry/s17a VARIANTS=default,persistent,PREFIXD_MIN_PREFIX_CHUNK=128,fused,fused-mk
set -uo pipefail
cd "$(dirname "$0")/../.."
CARRY=${CARRY:?set CARRY to the directory holding bins.tar.xz}
OUT=${OUT:-/tmp/s17-small}
mkdir -p /tmp/b "$OUT" && tar -C /tmp/b -xJf "$CARRY/bins.tar.xz"
cd /tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
V=${VARIANTS:-default}
[ -n "${SKIP_SMALL:-}" ] || timeout 240 ./prefixd_kernel_bench --heads 32/8,32/32 -b 16,64,256 -p 1024,8192,32768 -s 32 --no-baseline -c 1 \
  --variants "$V" --csv "$OUT/s32.csv" >"$OUT/s32.txt" 2>&1
echo "== S=32 rc=$?"; grep -A40 "^# shape" "$OUT/s32.txt" | cut -c1-200 | grep -v "^#  "; grep "wrong results" "$OUT/s32.txt"
timeout 120 ./prefixd_kernel_bench --heads 32/8,32/32 -b 16,64,256 -p 1024 -s 256 --no-baseline -c 1 \
  --variants "$V" --csv "$OUT/p1024.csv" >"$OUT/p1024.txt" 2>&1
echo "== P=1024 S=256 rc=$?"; grep -A40 "^# shape" "$OUT/p1024.txt" | cut -c1-200 | grep -v "^#  "; grep "wrong results" "$OUT/p1024.txt"
# run 5 (EXTRA=1): the memory-bound B = 16 shapes and the 32/8 S = 256 decode under other variants.
if [ -n "${EXTRA:-}" ]; then
  timeout 150 ./prefixd_kernel_bench --heads 32/8,32/32 -b 16 -p 8192,32768 -s 32,256 --no-baseline -c 1 \
    --variants "${EXTRA_VARIANTS:-default}" --csv "$OUT/b16.csv" >"$OUT/b16.txt" 2>&1
  echo "== B=16 rc=$?"; grep -A40 "^# shape" "$OUT/b16.txt" | cut -c1-220 | grep -v "^#  "
  timeout 150 ./prefixd_kernel_bench --heads 32/8 -b 256 -p 1024,8192 -s 256 --no-baseline -c 1 \
    --variants "${EXTRA_VARIANTS:-default}" --csv "$OUT/b256.csv" >"$OUT/b256.txt" 2>&1
  echo "== 32/8 B=256 rc=$?"; grep -A40 "^# shape" "$OUT/b256.txt" | cut -c1-220 | grep -v "^#  "
fi
