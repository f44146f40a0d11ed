#!/usr/bin/env bash
# Session 66, run 4 (nvidia-h200): the swap-AB wgmma tile with each warp's 16 tokens keeping their
# own softmax state (--schedule split: one barrier per tile instead of two) against the plain
# schedule, on two and four warpgroups per SM; every timed launch checked; sanitizers on split.
#   CARRY=.carry/s66d bash bench/kernel/sessions/s66-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run4
P=/tmp/b/prefixd_suffix_wgmma_probe
for round in 1 2; do
  for shape in "--items 8 --tiles 4" "--items 64 --tiles 4" "--items 8 --tiles 32"; do
    for ctas in 1 2; do
      for sched in plain split; do
        $P --schedule $sched --ctas-per-sm $ctas $shape 2>&1 | tee -a "$OUT/probe.txt"
      done
    done
  done
done
for dt in bf16; do for items in 8 64; do $P --dtype $dt --schedule split --items $items 2>&1 | tee -a "$OUT/probe.txt"; done; done
for gqa in 1 8; do $P --gqa $gqa --schedule split 2>&1 | tee -a "$OUT/probe.txt"; done
for tool in racecheck memcheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $P --schedule split --items 2 --tiles 4 --reps 1 >"$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/$tool.log")"
done
pack_logs
