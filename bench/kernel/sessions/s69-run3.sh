#!/usr/bin/env bash
# Session 69, run 3 (nvidia-h200): the length rule's one-warp decode CTA (4 rounds, 32 CTAs per SM;
# by default from 8192 items of ≤ 32 tokens at GQA 1) — its GPU tests and sanitizers; the rule
# against it off and from 4096 items on GQA-1 short-item shapes (fp16 and bf16, head_dim 64 and 128);
# whether the same bytes as contiguous 8 KiB items (one KV head) decode faster than 32/32's 256-byte
# rows (--read-floor: the suffix part against a read of its bytes); then the grid.
#   CARRY=.carry/s69c bash bench/kernel/sessions/s69-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run3
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*Decode*'
GPU_TESTS_TIMEOUT=150 run_sanitizers '*DecodeWarpRule*'
OFF=PREFIXD_DECODE_WARP_MIN_ITEMS=0
RUN_TIMEOUT=200 run_variants rule "default,$OFF,PREFIXD_DECODE_WARP_MIN_ITEMS=4096" --heads 32/32,64/64 -b 128,256,512 -p 2048 \
  -s 8,32 --dtype fp16,bf16
RUN_TIMEOUT=100 run_variants rule64 "default,$OFF" --heads 32/32,16/16 -b 256,512 -p 8192 -s 16,32 --dtype fp16 -d 64
RUN_TIMEOUT=100 run_variants layout "default,$OFF" --heads 1/1 -b 8192 -p 1024 -s 32 --dtype fp16 --read-floor
RUN_TIMEOUT=100 run_variants layout32 "default,$OFF" --heads 32/32 -b 256 -p 1024 -s 32 --dtype fp16 --read-floor
echo "== layout: dtype heads B S variant | suffix part alone, read of its bytes (µs)"
for n in layout layout32; do
  awk -F, 'NR>1 {printf "%s %s/%s B%s S%s %-32s | %6.1f %6.1f\n",$1,$3,$4,$6,$8,$NF,$14,$36}' "$OUT/$n.csv"
done
SHOW_LINES=30 show_variants rule rule64
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -vE '^(NVIDIA|$)' | tail -14
pack_logs
