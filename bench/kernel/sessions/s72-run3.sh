#!/usr/bin/env bash
# Session 72, run 3 (nvidia-h200): where the GQA-1 memory-bound prefix's excess over a read lies, now
# that run 2 showed it is not its arithmetic at tiny M.
#  1. more prefix items than SMs (PREFIXD_PREFIX_TARGET_ITEMS 264, 396: two or three per CTA, the
#     producer streaming the next item's tiles while the current one ends) against the default
#     (132: one item per CTA, 4 SMs idle), interleaved per shape, fp16, twice (order swapped);
#  2. the prefix probe's timeline (when each CTA's first K tile lands, its tiles end, it exits) at
#     the default chunks and at twice as many.
#   CARRY=.carry/s72c bash bench/kernel/sessions/s72-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run3
I=PREFIXD_PREFIX_TARGET_ITEMS
RUN_TIMEOUT=150 run_variants items1 "default,$I=264,$I=396" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16
RUN_TIMEOUT=150 run_variants items2 "$I=396,$I=264,default" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16
show_parts items1 items2
for c in 0 8; do
  args=(); [ $c -gt 0 ] && args=(--chunks $c)
  timeout 90 /tmp/b/prefixd_prefix_probe --kernel wgmma --timeline "${args[@]}" \
    --shape 32/32:16:8192 --shape 32/32:64:8192 --shape 32/32:16:32768 >"$OUT/probe-chunks$c.txt" 2>&1
  echo "== probe chunks $c rc=$?"; grep -E '^#? *timeline|^ *wgmma|p50|median' "$OUT/probe-chunks$c.txt" | cut -c1-220 | head -30
done
pack_logs
