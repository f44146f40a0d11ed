#!/usr/bin/env bash
# Session 71, run 3 (nvidia-h200): the memory-bound GQA-1 prefix on all 132 SMs. Its plan gives
# 128 items (32 heads x 4 chunks) to 128 CTAs; a plain read of the same bytes uses every SM. The
# existing stream layout (PREFIXD_PREFIX_BALANCE_STREAM=1: the heads' ranges end to end over the
# grid) with the balancer's smallest gain at 0, so that it acts; fp16 and bf16, interleaved per shape.
#   CARRY=.carry/s71b bash bench/kernel/sessions/s71-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run3
V="default,PREFIXD_PREFIX_BALANCE_STREAM=1+PREFIXD_PREFIX_BALANCE_MIN_GAIN=0,PREFIXD_PREFIX_BALANCE_MIN_GAIN=0"
RUN_TIMEOUT=150 run_variants stream "$V" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16,bf16
SHOW_LINES=60 show_variants stream
pack_logs
