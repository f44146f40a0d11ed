#!/usr/bin/env bash
# Session 89, run 5. On an H200 first the grid (run_bar_grid). Then, on any card: runs 2-3 found
# the prefix grid faster on the stream balance's whole and narrow slots (120-124 CTAs) than on a
# tails plan; the sequential step's compute-bound prefix at 32/8 B256 runs 128 items on 128 CTAs
# (64 pairs × 2 chunks), 4 SMs idle, where the stream with a narrow slot of 4 would use all 132 (a
# 3% larger grid). The step with the stream balance on every plan (PREFIXD_PREFIX_BALANCE_STREAM=1,
# the balancer's least gain 0) against the default, at the S32 steps the planner runs one after the
# other (32/8 and 32/32 B128-256 P8192-32768, fp16), two rounds, interleaved.
# Carry .carry/s89b (ignored, local; 72a7dfc's binaries; rebuild steps in s89-run4.sh's header).
#   CARRY=.carry/s89b bash bench/kernel/sessions/s89-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run5
run_bar_grid
V=default,PREFIXD_PREFIX_BALANCE_STREAM=1+PREFIXD_PREFIX_BALANCE_MIN_GAIN=0
for r in 1 2; do
  run_variants stream-r$r "$V" --heads 32/8,32/32 -b 128,256 -p 8192,32768 -s 32 --dtype fp16
done
SHOW_LINES=40 show_variants stream-r1 stream-r2 | grep -E '^  fp16|total us|prefix part' | head -60
for r in 1 2; do grep -o "prefix-plan([^)]*)[^[]*\[[^]]*\]" "$OUT/stream-r$r.txt" | sort | uniq -c | head -20; done
pack_logs
