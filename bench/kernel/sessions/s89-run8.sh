#!/usr/bin/env bash
# Session 89, run 8. On an H200 first the grid (run_bar_grid). Then, on any card: the concurrent
# mode at head_dim 64, which the planner never tries (PlanOptions::concurrent_min_head_dim = 128:
# session 47 measured it 4-7% slower there, with the decode of one CTA per item on k = 20-28 SMs).
# Since then the TMA decode (session 51) and the prefix stream's slots on k = 8-16 (sessions 60,
# 89): the step with the TMA decode forced on k = 8, 10, 12, 16 SMs against the default (one after
# the other), 32/8 and 32/32 D64 B256 P32768 S128-256 fp16 and 32/8 S256 bf16, two rounds.
# Carry .carry/s89c (ignored, local; rebuild steps in s89-run6.sh's header).
#   CARRY=.carry/s89c bash bench/kernel/sessions/s89-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run8
run_bar_grid
V=default
for k in 8 10 12 16; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
for r in 1 2; do
  run_variants d64-fp16-r$r "$V" --heads 32/8,32/32 -d 64 -b 256 -p 32768 -s 128,256 --dtype fp16
  run_variants d64-bf16-r$r "$V" --heads 32/8 -d 64 -b 256 -p 32768 -s 256 --dtype bf16
done
SHOW_LINES=40 show_variants d64-fp16-r1 d64-bf16-r1 d64-fp16-r2 d64-bf16-r2 | grep -E '^  (fp16|bf16)|total us|prefix part' | head -70
for f in "$OUT"/d64-*-r1.txt; do grep -o "concurrent(k=[0-9]*[^)]*)" "$f" | sort | uniq -c; done
pack_logs
