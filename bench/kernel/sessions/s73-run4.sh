#!/usr/bin/env bash
# Session 73, run 4 (nvidia-h200): the automatic early-decode share at the nearest compute-bound
# miss, 32/32 B256 P32768 S32 (bf16 248.0 us against 246.3 in s72; the auto rule gives ~30% of the
# suffix to the TMA decode on the prefix grid's 4 idle SMs, from 55 GB/s per SM × 0.85 safety,
# capped at 40%): fixed shares 25-50% against the default, fp16 and bf16, interleaved per shape,
# twice (order swapped).
#   CARRY=.carry/s73c bash bench/kernel/sessions/s73-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s73-run4
E=PREFIXD_EARLY_DECODE_PERCENT
args=(--heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16)
RUN_TIMEOUT=200 run_variants early1 "default,$E=25,$E=30,$E=35,$E=40,$E=50" "${args[@]}"
RUN_TIMEOUT=200 run_variants early2 "$E=50,$E=40,$E=35,$E=30,$E=25,default" "${args[@]}"
show_parts early1 early2
pack_logs
