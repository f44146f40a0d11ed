#!/usr/bin/env bash
# (The knob and the trigger change it used were removed after run 6 measured no gain; to re-run, apply
# bench/kernel/results/s65/early-beside-narrow-grid.patch to commit c49a349.)
# Session 65, run 4 (nvidia-h200): the early decode beside a narrower compute-bound prefix grid.
# At 32/32 B256 P32768 S32 the plan's 128 prefix CTAs leave 4 SMs to the early decode (auto share
# ≤ 40%); the decode after the prefix then adds ~32 µs to a ~224 µs prefix part. On paper a grid of
# 124 or 120 CTAs (the stream over the heads, PREFIXD_PREFIX_BALANCE_CTAS) costs the prefix 3-7% and
# lets 8-12 SMs stream 65-100% of the suffix beside it. Default against N CTAs with early shares E,
# interleaved per shape, two processes, fp16 and bf16.
#   CARRY=.carry/s65c bash bench/kernel/sessions/s65-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s65-run4
S=PREFIXD_PREFIX_BALANCE_STREAM=1
C=PREFIXD_PREFIX_BALANCE_CTAS
E=PREFIXD_EARLY_DECODE_PERCENT
V="default,$S+$C=124,$S+$C=124+$E=60,$S+$C=124+$E=75,$S+$C=120+$E=90,$S+$C=120+$E=100,$S+$C=116+$E=100"
for i in 1 2; do
  RUN_TIMEOUT=200 run_variants narrow$i "$V" -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16
done
show_parts narrow1 | cut -c1-200
SHOW_LINES=40 show_variants narrow1 narrow2 | grep -v "^#$" | cut -c1-220
pack_logs
