#!/usr/bin/env bash
# Session 66, run 6 (nvidia-h200): run 3's schedules again now that the item end divides once per
# column (run 5): plain ILP 1 / 2, staggered, FA3, on two warpgroups per SM, the suffix's items of
# 4 tiles (8 and 64 per warpgroup); every timed launch checked.
#   CARRY=.carry/s66e bash bench/kernel/sessions/s66-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run6
P=/tmp/b/prefixd_suffix_wgmma_probe
for round in 1 2; do
  for shape in "--items 8 --tiles 4" "--items 64 --tiles 4"; do
    for sched in "--ilp 1" "--ilp 2" "--ilp 2 --schedule staggered" "--schedule fa3"; do
      $P $sched $shape 2>&1 | tee -a "$OUT/probe.txt"
    done
  done
done
for dt in bf16; do $P --dtype $dt --items 64 2>&1 | tee -a "$OUT/probe.txt"; done
pack_logs
