#!/usr/bin/env bash
# Session 66, run 5 (nvidia-h200): the plain schedule's item end with one division per column
# instead of one per value, against the split schedule, on two warpgroups per SM: how much of the
# ~1200 clocks per item end (runs 3-4) the divisions were. Every timed launch checked.
#   CARRY=.carry/s66e bash bench/kernel/sessions/s66-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run5
P=/tmp/b/prefixd_suffix_wgmma_probe
for round in 1 2; do
  for shape in "--items 8 --tiles 4" "--items 64 --tiles 4" "--items 8 --tiles 32"; do
    for sched in plain split; do $P --schedule $sched $shape 2>&1 | tee -a "$OUT/probe.txt"; done
  done
done
pack_logs
