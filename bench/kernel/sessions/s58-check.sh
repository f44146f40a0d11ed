#!/usr/bin/env bash
# Session 58, run 2 (nvidia-h200): the plan's K/V tile at head_dim 128 (ChoosePrefixKvTileTokens:
# 160 tokens for long items in wide CTAs, concurrent plans only where items average ≥ 8192).
#   1. the whole GPU suite with the default sanitizer lists (new: the 160-token oracle cases, the
#      cascade test of plans that take the long tile);
#   2. the head_dim-128 grid shapes with wide CTAs (B 64 / 256), fp16 and bf16: the plan's choice
#      (default) against the 128-token tile forced, each twice, in one process.
#   CARRY=.carry/s58b bash bench/kernel/sessions/s58-check.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s58-check
run_whole_suite
grep -h "HeadDim128LongTile" "$OUT"/check/*.log 2>/dev/null | head -3
RUN_TIMEOUT=250 run_variants d128 "default,PREFIXD_SM90A_KV_TILE=128,default,PREFIXD_SM90A_KV_TILE=128" \
  -d 128 --heads 32/32,32/8 -b 64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16
SHOW_LINES=60 show_variants d128 | head -54
pack_logs
