#!/usr/bin/env bash
# Session 88, run 3: when the short items' CTAs get their first K tile, s84's exact softmax (old) and
# this tree's speculative one (new). Run 2's Nsight Compute A/B on an H100 put the speculative
# kernel's extra time at 32/8 D128 B64 P8192 (one 1024-token item per CTA) in the consumers' wait
# for the CTA's first K tile (that wait 98 -> 227 samples of 2174 / 2318; no_instruction stalls
# unchanged, 10.7% / 10.4%): the prefix probe's timeline (per-phase globaltimer stamps of one
# launch after an L2 flush: entry, ring ready, producer start, Q loaded, first K tile, tiles done,
# epilogue done, exit) for both builds in turn, three times, at the two shapes the speculative
# softmax lost on (32/8 B64 P8192, 32/32 B256 P8192) and one it won on (32/8 B256 P8192).
# Then, only where the card is an H200 (the bar's), issue4-grid.sh with this tree's kernel bench
# (the refit planner's first H200 grid).
# Carry .carry/s88 (ignored, local): prefixd_kernel_bench and prefixd_prefix_probe of this tree
# (7ba1d8f's kernels), prefixd_prefix_probe_old of 5e5cbbe (s84):
#   CARRY=.carry/s88 bash bench/kernel/sessions/s88-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run3
shapes=(--shape 32/8:64:8192 --shape 32/32:256:8192 --shape 32/8:256:8192)
for r in 1 2 3; do
  for b in old new; do
    exe=/tmp/b/prefixd_prefix_probe; [ $b = old ] && exe=/tmp/b/prefixd_prefix_probe_old
    timeout 90 $exe --kernel wgmma --timeline "${shapes[@]}" >"$OUT/probe-$b$r.txt" 2>&1
    echo "== probe $b round $r rc=$?"
    grep -E '^ *wgmma|# timeline|first K|tiles done|exit ' "$OUT/probe-$b$r.txt" | cut -c1-150
  done
done
run_bar_grid
pack_logs
