#!/usr/bin/env bash
# Session 72, run 2 (nvidia-h200): the narrow CTA's tiny-rows consumer (mma.sync on row tiles of 16,
# kernels/cuda/sm90a/prefix_tiny_rows_sm90a.cuh; PREFIXD_SM90A_TINY_ROWS, auto where every item has
# at most 16 rows).
#  1. the sm_90a prefix kernel's oracle tests (the 68 new _tiny cases and every other case), the
#     cascade, graph, concurrent and early-decode tests: 8 gtest shards side by side;
#  2. memcheck and racecheck on four of the tiny cases;
#  3. the same binary with the consumer (auto) and without (=0), interleaved per shape, at the grid's
#     GQA-1 B16 rows (16 rows per item), fp16 and bf16, twice (the variants' order swapped), the first
#     round with the read floors.
#   CARRY=.carry/s72b bash bench/kernel/sessions/s72-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run2
F='*PrefixAttentionKernelTest*wgmma*:PrefixAttentionQueryMap.*:*PrefixAttentionKernelSelection*:Shapes/CudaCascadeTest.*:*CudaGraph*:*CudaConcurrentCascade*:*CudaEarlyDecode*'
run_test_shards "$F"
run_sanitizers '*wgmma_tiny1_ManyItems_d128_fp16*:*wgmma_tiny1_PoisonShortPrefix_bf16*:*wgmma_ctas3_tiny1_QueryRows_g1_fp16*:*wgmma_tiny1_Flat_bf16_d128_g1*'
T=PREFIXD_SM90A_TINY_ROWS
RUN_TIMEOUT=150 run_variants tiny1 "default,$T=0" --heads 32/32 -b 16 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 --read-floor
RUN_TIMEOUT=150 run_variants tiny2 "$T=0,default" --heads 32/32 -b 16 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16
show_parts tiny1 tiny2
awk -F, 'NR>1 && $NF=="default" {printf "%s B%s P%s S%s prefix %.1f read_prefix %s total %.1f read %s\n",$1,$6,$7,$8,$13,$35,$16,$32}' "$OUT/tiny1.csv"
pack_logs
