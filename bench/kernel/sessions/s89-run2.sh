#!/usr/bin/env bash
# Session 89, run 2. On an H200 first the grid (run_bar_grid). Then, on any card: run 1 found the
# concurrent TMA step's prefix part fastest where 132 − k CTAs fill the stream balance's slots of 8
# (k = 16: 14 slots and a narrow one of 4, 211.5 µs against 216-217 at k = 14, 15, 17, 19, 20 at
# 32/8 B256 P32768 S128, an H100). The cost model puts k = 12 (120 CTAs, 15 whole slots; not a
# backend candidate) first at S64-S128 there (234-236 µs against 240-242 at its k = 14): the step
# with the TMA decode forced on k = 8, 10, 12, 14, 16 and the planner's own choice (default), at the
# prefix-bound 32/8 shapes (S32-S128), fp16, $ROUNDS rounds (2), interleaved.
# Carry .carry/s88d (ignored, local; HEAD's binaries; rebuild steps in s88-run6.sh's header).
#   CARRY=.carry/s88d bash bench/kernel/sessions/s89-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run2
run_bar_grid
V=default
for k in 8 10 12 14 16; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  run_variants ksmall-a-r$r "$V" --heads 32/8 -b 256 -p 32768 -s 32,64,128 --dtype fp16
  run_variants ksmall-b-r$r "$V" --heads 32/8 -b 128,256 -p 16384,32768 -s 64,128 --dtype fp16
done
SHOW_LINES=40 show_variants $(ls "$OUT" | sed -n 's/\.txt$//p' | grep ksmall) | grep -E '^  (fp16|bf16)|total us' | head -60
pack_logs
