#!/usr/bin/env bash
# Session 70, run 3 (nvidia-h200): the persistent TMA decode's CTA count. It packs its items a
# CTA's warps at a time (12 per CTA), so that few long items stream on few SMs: 24 early items of
# 256 tokens on 2 SMs (run 2: the early decode's suffix part alone +13 µs at 32/8 B16 P1024 S256),
# the sequential decode's 512 items on 43 of 132 SMs at 32/32 B16 S256. PREFIXD_DECODE_TMA_ITEMS_PER_CTA
# = n spreads them n per CTA. Its tests first, then n = 1, 2, 4 against the default, on the sequential
# TMA decode's shapes (GQA 1, items of 128-512 tokens) and on the early decode at P1024 S256.
#   CARRY=.carry/s70b bash bench/kernel/sessions/s70-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run3
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*SequentialTmaDecode*:*CudaEarlyDecode.MatchesFloat64*'
N="PREFIXD_DECODE_TMA_ITEMS_PER_CTA"
RUN_TIMEOUT=150 run_variants seq "default,$N=1,$N=2,$N=4" --heads 32/32 -b 16,32 -p 1024,8192 -s 128,256,512 --dtype fp16
E="PREFIXD_EARLY_DECODE_PERCENT"
RUN_TIMEOUT=150 run_variants early "default,$E=35,$E=35+$N=1,$E=35+$N=2,$E=70+$N=1" \
  --heads 32/8 -b 16,64,256 -p 1024 -s 256 --dtype fp16
RUN_TIMEOUT=150 run_variants early1 "default,$E=35,$E=35+$N=1,$E=35+$N=2,$E=70+$N=1" \
  --heads 32/32 -b 16,64 -p 1024 -s 256 --dtype fp16
SHOW_LINES=50 show_variants seq early early1
pack_logs
