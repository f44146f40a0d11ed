#!/usr/bin/env bash
# Session 89, run 9. On an H200 first the grid (run_bar_grid). Then, on any card: run 8 found the
# concurrent step with the TMA decode on k = 16 SMs 8% faster than one after the other at 32/8 D64
# B256 P32768 S256 (a bar row: 196-199 → 180-181 µs fp16 on an H100), a mode the planner never
# tries below head_dim 128. For a cost-model fit of the TMA decode at head_dim 64 and a CPU test of
# the planner's choices there: session 87 run 7's forced-k table at head_dim 64 — the step one after
# the other (PREFIXD_CONCURRENT_DECODE_SMS=0) and with the TMA decode forced on k = 8-36 SMs,
# interleaved, one round, 32/8 D64 fp16 (the 20 shapes) and 64/8 D64 B256 P32768 S128-256.
# Carry .carry/s89c (ignored, local; rebuild steps in s89-run6.sh's header).
#   CARRY=.carry/s89c bash bench/kernel/sessions/s89-run9.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run9
run_bar_grid
V=PREFIXD_CONCURRENT_DECODE_SMS=0
for k in 8 10 12 14 16 20 28 36; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
run_variants d64-grid "$V" --heads 32/8 -d 64 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
run_variants d64-edge "$V" --heads 32/8 -d 64 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
run_variants d64-gqa8 "$V" --heads 64/8 -d 64 -b 256 -p 32768 -s 128,256 --dtype fp16
SHOW_LINES=30 show_variants d64-grid d64-edge d64-gqa8 | grep -E '^  fp16|total us' | head -30
pack_logs
