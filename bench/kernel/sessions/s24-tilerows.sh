#!/usr/bin/env bash
# Session 24, one device call (nvidia-h200): 64-row prefix items (PREFIXD_PREFIX_TILE_ROWS=64) on
# shapes whose groups have ≥ 128 rows per KV head, where the default plan makes 128-row items and
# the wide CTA then holds the whole SM. With 64-row items every prefix CTA is the narrow one and
# the decode kernel's first wave streams beside it. Predicted: a gain where the decode dominates and
# the prefix is short (32/8 B256 P1024 S256: 92.4 µs, bar 89.4), a loss where the prefix is
# compute-bound (twice the K/V tiles through L2, one warpgroup per CTA). Variants default and
# PREFIXD_PREFIX_TILE_ROWS=64 interleaved per shape. Binaries carried as $CARRY/bins.tar.xz.
#   run 1: CARRY=.carry/s24a
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s24-tilerows
[ -n "${FILTER:-}" ] && run_gpu_tests "$FILTER"
V=${V:-default,PREFIXD_PREFIX_TILE_ROWS=64}
run() {  # name, bench arguments...
  local name=$1; shift
  timeout 200 $B "$@" --no-baseline --no-graph -c 1 --variants "$V" --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(grep 'wrong results' "$OUT/$name.txt")"
}
run grid8 --heads 32/8 -b 64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16
run grid32 --heads 32/32 -b 256 -p 1024,8192 -s 32,256 --dtype fp16
run unseen --heads 16/4,64/8 -b 48,160 -p 512,2048,6144 -s 128,384 --dtype bf16
python3 bench/kernel/variant_diff.py "$OUT/grid8.csv" "$OUT/grid32.csv" "$OUT/unseen.csv"
