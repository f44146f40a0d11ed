#!/usr/bin/env bash
# Session 71, run 2 (nvidia-h200): whether the memory-bound prefix stream is short of bytes in
# flight. The narrow CTA (one consumer warpgroup, the default where items have <= 64 rows) has a
# 2-stage ring of 64 KiB K/V stages; a stage is released only after its tile's arithmetic, so
# fewer than two tiles may be in flight. Existing knobs only: the wide CTA with its 2-stage ring,
# and with the 3-stage ring (PREFIXD_SM90A_STAGES=3), at the memory-bound GQA-1 and GQA-4 rows, fp16,
# interleaved per shape, twice.
#   CARRY=.carry/s71b bash bench/kernel/sessions/s71-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run2
V="default,PREFIXD_SM90A_CONSUMERS=2,PREFIXD_SM90A_CONSUMERS=2+PREFIXD_SM90A_STAGES=3,PREFIXD_SM90A_STAGES=3"
for i in 1 2; do
  RUN_TIMEOUT=150 run_variants ring$i "$V" --heads 32/32 -b 16,64 -p 8192,32768 -s 32 --dtype fp16
  RUN_TIMEOUT=150 run_variants ring8_$i "$V" --heads 32/8 -b 16,64 -p 8192,32768 -s 32 --dtype fp16
done
SHOW_LINES=40 show_variants ring1 ring8_1 ring2 ring8_2
pack_logs
