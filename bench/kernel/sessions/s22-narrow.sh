#!/usr/bin/env bash
# Session 22, one device call (nvidia-h200): the narrow prefix CTA (one consumer warpgroup, half the
# register file; PREFIXD_SM90A_CONSUMERS, WgmmaPrefixConfig) that lets the decode kernel's CTAs
# stream beside the prefix. Its GPU tests (forced narrow and wide, the cascade around them), then
# prefixd_kernel_bench with the variants default (auto: narrow where every prefix item has ≤ 64
# rows) and PREFIXD_SM90A_CONSUMERS=2 (the wide CTA, as before) interleaved per shape: the issue's
# fp16 grid shapes with ≤ 64 rows per KV head (32/32 B16/B64, 32/8 B16), and bf16 shapes it was not
# chosen on. Binaries carried as $CARRY/bins.tar.xz.
#   runs 1-2: CARRY=.carry/s22a (no carveout), .carry/s22b
#   runs 7-8 need results/s22/tile-sharing.patch (git apply; measured slower, not kept; run 7 had
#   an earlier form of it, every tile from the counter):
#   run 7, tile sharing against none: CARRY=.carry/s22d V=default,PREFIXD_SM90A_TILE_SHARING=0
#     FILTER="*TileSharing*:*_wg1_*:*CudaCascade*:*Graph*:*BadSettings*" (every tile from the counter: slower)
#   run 8, static tiles first and a pool of 2 (4) per item: CARRY=.carry/s22e
#     V=default,PREFIXD_SM90A_TILE_SHARING=0,PREFIXD_PREFIX_TILE_SPARE=4 (same FILTER) AGAINST=PREFIXD_SM90A_TILE_SHARING=0
#   run 12 (needs results/s22/decode-beside.patch; slower, not kept), the decode beside the narrow
#   CTA, unfused (PREFIXD_DECODE_BESIDE): CARRY=.carry/s22h
#     V=default,PREFIXD_DECODE_BESIDE=1 FILTER="*DecodeBeside*:*CudaCascade*:*CudaGraph*"
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s22-narrow
run_gpu_tests "${FILTER:-*_wg1_*:*_wg2_*:*BadSettings*:*CudaCascade*:*Graph*}"
grep -E "^\[  FAILED  \]" "$OUT/tests.log" | head -5
V=${V:-default,PREFIXD_SM90A_CONSUMERS=2}  # run 7: V=default,PREFIXD_SM90A_TILE_SHARING=0
run() {  # name, bench arguments...
  local name=$1; shift
  timeout 170 $B "$@" --no-baseline --no-graph -c 1 --variants "${VARIANTS:-$V}" --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(grep 'wrong results' "$OUT/$name.txt")"
}
run grid32 --heads 32/32 -b 16,64 -p 1024,8192,32768 -s 32,256 --dtype fp16
run grid8 --heads 32/8 -b 16 -p 1024,8192,32768 -s 32,256 --dtype fp16
run unseen --heads 16/16,64/8,32/32 -b 8,48 -p 4096,16384 -s 64,512 --dtype bf16
python3 bench/kernel/variant_diff.py "$OUT/grid32.csv" "$OUT/grid8.csv" "$OUT/unseen.csv" ${AGAINST:+--against "$AGAINST"}
