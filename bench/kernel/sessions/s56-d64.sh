#!/usr/bin/env bash
# Session 56, run 5 (nvidia-h200): the head_dim-64 rows' prefix part (the issue's "prefix part ≥ 60%
# of the GEMM rate" reads 58.2-60.0% there, session 55) under the settings a plan could take
# instead: the stream balance over the heads, the K/V L2 policies, 128-token tiles, 3 stages.
#   CARRY=.carry/s56d bash bench/kernel/sessions/s56-d64.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s56-d64
run_variants d64 "default,PREFIXD_PREFIX_BALANCE_STREAM=1,PREFIXD_SM90A_KV_POLICY=first,PREFIXD_SM90A_KV_POLICY=last,PREFIXD_SM90A_KV_TILE=128,PREFIXD_SM90A_STAGES=3,default" \
  -d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
show_parts d64
SHOW_LINES=40 show_variants d64
pack_logs
