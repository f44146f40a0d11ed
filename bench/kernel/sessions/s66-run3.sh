#!/usr/bin/env bash
# Session 66, run 3 (nvidia-h200): the swap-AB wgmma tile with the two items of a warpgroup
# staggered (one item's softmax while the other's wgmmas run) and on FlashAttention-3's schedule
# (Sᵀ of tile t with Oᵀ of t − 1, the warpgroups' issue blocks taking turns) against run 1's plain
# schedules, and with four warpgroups per SM (two CTAs) instead of two; every timed launch checked.
#   CARRY=.carry/s66c bash bench/kernel/sessions/s66-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run3
P=/tmp/b/prefixd_suffix_wgmma_probe
for round in 1 2; do
  for shape in "--items 8 --tiles 4" "--items 64 --tiles 4" "--items 8 --tiles 32"; do
    for ctas in 1 2; do
      for sched in "--ilp 1" "--ilp 2" "--ilp 2 --schedule staggered" "--schedule fa3"; do
        $P $sched --ctas-per-sm $ctas $shape 2>&1 | tee -a "$OUT/probe.txt"
      done
    done
  done
done
$P --dtype bf16 --ilp 2 --schedule staggered 2>&1 | tee -a "$OUT/probe.txt"
$P --dtype bf16 --ilp 2 --schedule staggered --items 64 2>&1 | tee -a "$OUT/probe.txt"
$P --dtype bf16 --schedule fa3 2>&1 | tee -a "$OUT/probe.txt"
$P --dtype bf16 --schedule fa3 --items 64 2>&1 | tee -a "$OUT/probe.txt"
for gqa in 1 8; do $P --gqa $gqa --schedule fa3 2>&1 | tee -a "$OUT/probe.txt"; done
for sched in staggered fa3; do
  args="--schedule $sched"; [ $sched = staggered ] && args="$args --ilp 2"
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $P $args --items 2 --tiles 4 --reps 1 >"$OUT/racecheck-$sched.log" 2>&1
  echo "racecheck ($sched) rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck-$sched.log")"
done
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $P --schedule fa3 --ctas-per-sm 2 --items 2 --tiles 4 --reps 1 >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log")"
pack_logs
