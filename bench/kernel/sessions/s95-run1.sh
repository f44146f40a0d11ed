#!/usr/bin/env bash
# Session 95, run 1 (session 94's run 2, which got no machine there), on b907c39's binaries
# (.carry/s93a; HEAD's kernels). On the H200, with the chained concurrent step (the default): (1) the
# step's k forced at the headline row (32/8 B256 P32768 S256, fp16 and bf16; k = 14, 16, 18 against
# the default), as session 90 run 2 did for the two-stream step; (2) the planner checks on the
# bar's shapes (the grid half of run_offgrid_planner_checks, P 128-32768: the measured choice
# against plain decode and min(cascade, plain)), their first with the chain (device time was
# short: no off-grid shapes, no main job).
#   mkdir -p .carry/s93a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T4 > .carry/s93a/bins.tar.xz   # built at b907c39
#   CARRY=.carry/s93a bash bench/kernel/sessions/s95-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s95-run1
V=default
for k in 14 16 18; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
# fp16 first, then bf16 (device time was short: what a cut-off run leaves under $OUT comes back).
for dt in fp16 bf16; do
  RUN_TIMEOUT=80 run_variants kscan-$dt "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype $dt
  SHOW_LINES=12 show_variants kscan-$dt
  timeout 150 $B --planner-check --dtype $dt >"$OUT/grid-$dt.txt" 2>&1  # run_offgrid_planner_checks' grid half
  echo "== planner grid-$dt rc=$?, $(grep -cE '^ +(fp16|bf16) ' "$OUT/grid-$dt.txt") shapes"
  grep -E "planner check:|measured choice" "$OUT/grid-$dt.txt" | grep -v "must be"
  grep -E "SLOW|WRONG" "$OUT/grid-$dt.txt" | grep -E '^ +(fp16|bf16) ' | head -20
done
pack_logs
