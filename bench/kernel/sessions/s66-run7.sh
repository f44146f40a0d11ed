#!/usr/bin/env bash
# Session 66, run 7 (nvidia-h200): run 6's schedules on the probe after its plain schedule was
# rewritten onto the shared helpers (issue_s, issue_o, rescale_o, fence_o; commit after 9fc2888),
# to confirm the rewrite changed neither results nor times; plus --part mma once.
#   CARRY=.carry/s66f bash bench/kernel/sessions/s66-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run7
P=/tmp/b/prefixd_suffix_wgmma_probe
for shape in "--items 8 --tiles 4" "--items 64 --tiles 4" "--items 8 --tiles 32"; do
  for sched in "--ilp 1" "--ilp 2" "--ilp 1 --part mma"; do $P $sched $shape 2>&1 | tee -a "$OUT/probe.txt"; done
done
pack_logs
