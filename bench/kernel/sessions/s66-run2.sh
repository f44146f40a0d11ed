#!/usr/bin/env bash
# Session 66, run 2 (nvidia-h200): the swap-AB wgmma tile's two wgmma chains alone (--part mma,
# wrong results on purpose) beside the whole tile (--part all, checked), same shapes, to tell the
# tensor-core instructions' share of run 1's ~650 clocks per 64-token tile per SM.
#   CARRY=.carry/s66b bash bench/kernel/sessions/s66-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run2
P=/tmp/b/prefixd_suffix_wgmma_probe
for round in 1 2; do
  for ilp in 1 2; do
    for shape in "--items 64 --tiles 4" "--items 8 --tiles 32"; do
      for part in all mma; do
        $P --ilp $ilp --part $part $shape 2>&1 | tee -a "$OUT/probe.txt"
      done
    done
  done
done
pack_logs
