#!/usr/bin/env bash
# Session 89, run 1. On an H200 (the bar's card) first the grid and head_dim rows on this tree's
# binaries (session 87's refit, session 88's long-tile rule; run_bar_grid). On any card then: the
# concurrent TMA step's k between the backend's candidates 14, 16 and 20 (cost_model.cc
# ConcurrentTmaDecodeCandidates), which have a gap since the speculative softmax moved the best k
# from 14 to 16 (s87-88): the step with the TMA decode forced on k = 14..20 SMs and the planner's
# own choice (default), at the long-prefix 32/8 shapes where the planner takes k = 14-20, fp16 and
# bf16, $ROUNDS rounds (2), interleaved.
# Carry .carry/s88d (ignored, local; HEAD's binaries; rebuild steps in s88-run6.sh's header).
#   CARRY=.carry/s88d bash bench/kernel/sessions/s89-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run1
run_bar_grid
V=default
for k in 14 15 16 17 18 19 20; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  run_variants kscan-fp16-r$r "$V" --heads 32/8 -b 128,256 -p 16384,32768 -s 128,256 --dtype fp16
  run_variants kscan-bf16-r$r "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype bf16
done
SHOW_LINES=40 show_variants $(ls "$OUT" | sed -n 's/\.txt$//p' | grep kscan) | grep -E '^  (fp16|bf16)|total us' | head -60
pack_logs
