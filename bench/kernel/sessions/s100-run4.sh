#!/usr/bin/env bash
# Session 100, run 4, on .carry/s100a (11d6dc3's binaries). Run 3 (an H100) had the TMA decode at 8
# warps 2.8-4.4 us faster than the default 12 at 32/8 D128 B128/B192 P32768 S256 (slower at B256).
# Here: default against PREFIXD_DECODE_TMA_WARPS=8, twice interleaved, one process per dtype, over
# 32/8 D64/D128 B64-256 P8192/32768 S128/512 with the model's plans (the benchmark's default: no --measured-choice).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run4
v=default,PREFIXD_DECODE_TMA_WARPS=8,default,PREFIXD_DECODE_TMA_WARPS=8
for dt in fp16 bf16; do
  RUN_TIMEOUT=250 run_variants "w8-$dt" "$v" --heads 32/8 -d 64,128 -b 64,128,192,256 -p 8192,32768 -s 128,512 \
    --dtype $dt
  SHOW_LINES=36 show_variants "w8-$dt"
done
echo "elapsed ${SECONDS} s"
pack_logs
