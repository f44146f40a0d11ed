#!/usr/bin/env bash
# Session 63, run 4 (nvidia-h200), on session 61's final binaries (commit e43cba6): the prefix stream
# over the heads (PlanOptions::balance_stream, prefix_balance.h) for the sequential cascade, i.e.
# the prefix grid on all 132 SMs instead of the 128 CTAs of the plan's chunks (4 SMs idle for the
# whole prefix part: 3% of a compute-bound one). Until now the stream was on only with a concurrent
# decode (PREFIXD_PREFIX_BALANCE_STREAM defaults to it); the tails rule (s44) leaves the 4 SMs idle
# at head_dim 128. Each row default against PREFIXD_PREFIX_BALANCE_STREAM=1, interleaved in one
# process, twice (two processes), fp16 and bf16.
#   CARRY=.carry/s63a bash bench/kernel/sessions/s63-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s63-run4
S=PREFIXD_PREFIX_BALANCE_STREAM=1
for i in 1 2; do
  RUN_TIMEOUT=280 run_variants stream$i "default,$S" -d 128 --heads 32/32,32/8 -b 16,64,256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
done
show_parts stream1 | cut -c1-200
SHOW_LINES=60 show_variants stream1 stream2 | grep -v "^#$" | cut -c1-200
pack_logs
