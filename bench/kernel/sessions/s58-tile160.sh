#!/usr/bin/env bash
# Session 58, run 1 (nvidia-h200): 160-token K/V tiles at head_dim 128 (PREFIXD_SM90A_KV_TILE=160,
# sm90a::kLongKvTileTokens128; opt-in). Session 27's 176-token tiles spilled (176 / 288 bytes) and
# were slower; ptxas gives the 160-token build the 128-token one's spills (32 / 20 bytes).
#   1. the new 160-token oracle cases, the tile-refusal and settings tests; sanitizers on a few;
#   2. the head_dim-128 shapes, default against 160-token tiles, each twice, in one process
#      (parts timed alone, then the step).
#   CARRY=.carry/s58a bash bench/kernel/sessions/s58-tile160.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s58-tile160
run_gpu_tests '*_t160_*:*UnknownKvTile*:*BadSettings*'
run_sanitizers '*wgmma_t160_ManyItems_d128_fp16:*wgmma_plain_t160_PoisonGroups_page7_fp16:*wgmma_wg1_t160_SmallTile_d128_bf16:*wgmma_t160_LongChunk_bf16'
RUN_TIMEOUT=280 run_variants d128 "default,PREFIXD_SM90A_KV_TILE=160,default,PREFIXD_SM90A_KV_TILE=160" \
  -d 128 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16
show_parts d128
SHOW_LINES=40 show_variants d128
pack_logs
