#!/usr/bin/env bash
# Session 63, run 5 (nvidia-h200), on session 61's final binaries (commit e43cba6). Run 4's
# PREFIXD_PREFIX_BALANCE_STREAM=1 left every sequential plan as it was (128 prefix items): the
# balancer takes the stream only where its model predicts at least the minimum gain, and the
# crossings' item costs leave ~1% at the compute-bound B256 rows. Here with that minimum at 0
# (PREFIXD_PREFIX_BALANCE_MIN_GAIN=0), so that the stream over the heads puts the prefix on all
# 132 SMs; default against it, interleaved in one process, twice, fp16 and bf16.
#   CARRY=.carry/s63a bash bench/kernel/sessions/s63-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s63-run5
S=PREFIXD_PREFIX_BALANCE_STREAM=1+PREFIXD_PREFIX_BALANCE_MIN_GAIN=0
for i in 1 2; do
  RUN_TIMEOUT=280 run_variants stream$i "default,$S" -d 128 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
done
show_parts stream1 | cut -c1-200
SHOW_LINES=60 show_variants stream1 stream2 | grep -v "^#$" | cut -c1-200
pack_logs
