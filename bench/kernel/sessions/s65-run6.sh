#!/usr/bin/env bash
# (The knob and the trigger change it used were removed after run 6 measured no gain; to re-run, apply
# bench/kernel/results/s65/early-beside-narrow-grid.patch to commit c49a349.)
# Session 65, run 6 (nvidia-h200): run 5 read the early decode beside a stream grid 15-68 µs slower
# than without it: the prefix kernel's programmatic trigger comes as each CTA starts its LAST item,
# and a stream grid's CTAs run chains, so the early grid launched late in the prefix part. Now the
# prefix triggers as each CTA starts its first item where an early grid follows
# (PrefixAttentionParams::trigger_at_first_item). The early-decode GPU tests, then the default
# against the stream on 124 / 120 CTAs with early shares, interleaved per shape, two processes.
#   CARRY=.carry/s65d bash bench/kernel/sessions/s65-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s65-run6
GPU_TESTS_TIMEOUT=120 run_gpu_tests '*Early*'
S=PREFIXD_PREFIX_BALANCE_STREAM=1
C=PREFIXD_PREFIX_BALANCE_CTAS
E=PREFIXD_EARLY_DECODE_PERCENT
V="default,$E=0,$S+$C=124+$E=0,$S+$C=124,$S+$C=124+$E=50,$S+$C=124+$E=70,$S+$C=120+$E=90,$S+$C=120+$E=100"
for i in 1 2; do
  RUN_TIMEOUT=200 run_variants early$i "$V" -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16
done
cut -d, -f1,9-17,32 "$OUT/early1.csv"
SHOW_LINES=40 show_variants early1 early2 | grep -v "^#$" | cut -c1-240
pack_logs
