#!/usr/bin/env bash
# (The knob and the trigger change it used were removed after run 6 measured no gain; to re-run, apply
# bench/kernel/results/s65/early-beside-narrow-grid.patch to commit c49a349.)
# Session 65, run 5 (nvidia-h200): where run 4's +104 to +190 µs comes from. Its narrower stream grids
# took the prefix part alone 12-23 µs longer, but the steps ~100 µs more than their parts. The
# stream on 124 and 128 CTAs with the early decode off (E = 0), at 30% and by the automatic rule,
# against the default with and without it, interleaved per shape, one process, fp16 and bf16.
#   CARRY=.carry/s65c bash bench/kernel/sessions/s65-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s65-run5
S=PREFIXD_PREFIX_BALANCE_STREAM=1
C=PREFIXD_PREFIX_BALANCE_CTAS
E=PREFIXD_EARLY_DECODE_PERCENT
V="default,$E=0,$S+$C=128,$S+$C=128+$E=0,$S+$C=124+$E=0,$S+$C=124+$E=30,$S+$C=124+$E=10"
RUN_TIMEOUT=200 run_variants split "$V" -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16
cut -d, -f1,9-17,32 "$OUT/split.csv"
SHOW_LINES=40 show_variants split | grep -v "^#$" | cut -c1-220
pack_logs
