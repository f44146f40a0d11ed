#!/usr/bin/env bash
# Session 77, run 2 (nvidia-h200): the GQA-4 S32 decode, the largest relative misses of the grid
# (32/8 B256 P1024 S32 36.8 us against a bar of 18.8; its decode part alone 25.2 us for 33.5 MB of
# K/V, a plain read of which takes 14.3): where it stalls and whether any existing decode setting
# moves it.
#   1. Nsight Compute (run_ncu_stalls) on one launch of the tensor-core decode kernel at 32/8 B256
#      P1024 S32 fp16 (2048 items of 32 tokens, 4096 16-token tiles);
#   2. the 32/8 S32 rows at B 64 / 256, P 1024 / 8192 (fp16) under the decode settings: default,
#      persistent, tma, w4, the deep pipeline, the CUDA-core kernel.
#   CARRY=.carry/s77a bash bench/kernel/sessions/s77-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run2
run_ncu_stalls dec32 DecodeAttention 4096 $B -d 128 --heads 32/8 -b 256 -p 1024 -s 32 --dtype fp16 --no-baseline \
  --no-graph -c 0 -n 3 -w 1 --copy-gib 1 --gemm-n 2048 --settle-ms 0
grep -E "Achieved Occupancy|Theoretical Occupancy|Block Limit|L2 Hit Rate|Mem Busy|Max Bandwidth|Memory Throughput|Registers Per|Shared Memory Configuration Size|Waves Per SM|Grid Size|Block Size" \
  "$OUT/dec32-details.txt" | head -24
RUN_TIMEOUT=200 run_variants s32 default,persistent,tma,w4,PREFIXD_DECODE_PIPELINE=deep,PREFIXD_DECODE_KERNEL=simt \
  -d 128 --heads 32/8 -b 64,256 -p 1024,8192 -s 32 --dtype fp16
show_parts s32
show_variants s32
pack_logs
