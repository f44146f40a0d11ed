#!/usr/bin/env bash
# Session 66, run 1 (nvidia-h200): the swap-AB wgmma decode tile (bench/suffix_wgmma_probe.cu) —
# checked against float64 on every item, then its arithmetic timed on two warpgroups per SM — and,
# in the same run, the TMA decode's mma.sync tile on every SM with copies only / arithmetic only
# (PREFIXD_DECODE_TMA_DIAG=1/2, wrong results on purpose) at 32/8 D128 B256 S256, the suffix the
# probe's projection is for.
#   CARRY=.carry/s66a bash bench/kernel/sessions/s66-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s66-run1
P=/tmp/b/prefixd_suffix_wgmma_probe
echo "== probe: the 8192 tiles of 32/8 B256 S256 as distributed (8 items x 4 tiles per warpgroup), then longer runs"
for dt in fp16 bf16; do
  for ilp in 1 2; do
    for shape in "--items 8 --tiles 4" "--items 64 --tiles 4" "--items 8 --tiles 32"; do
      $P --dtype $dt --ilp $ilp $shape 2>&1 | tee -a "$OUT/probe.txt"
    done
  done
done
for gqa in 1 8; do $P --gqa $gqa 2>&1 | tee -a "$OUT/probe.txt"; done
echo "== sanitizers on the probe (2 items x 2 tiles, one timed launch)"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $P --items 2 --tiles 2 --reps 1 >"$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tr '\n' ' ')"
done
echo "== the TMA decode on every SM: default, copies only, arithmetic only"
run_variants tma-diag "tma,tma+PREFIXD_DECODE_TMA_DIAG=1,tma+PREFIXD_DECODE_TMA_DIAG=2" --heads 32/8 -b 256 -p 1024 -s 256
show_parts tma-diag
pack_logs
