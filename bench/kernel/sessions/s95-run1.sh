#!/usr/bin/env bash
# Session 95, run 1, on b907c39's binaries (.carry/s93a; HEAD's kernels), for an H200, with the
# chained concurrent step (the default since session 92): session 94's unrun run 2 and the whole
# suite in one call (each start costs 1-3 minutes of device time; session 90's run 2 did the same
# three in 358 s). (1) The step's k forced at the headline row (32/8 B256 P32768 S256, fp16 and
# bf16; k = 14, 16, 18 against the default), as session 90 run 2 did for the two-stream step;
# (2) the planner checks on the bar's shapes and off the grid (run_offgrid_planner_checks: 233
# shapes, the measured choice against plain decode and min(cascade, plain)), their first with the
# chain; (3) the whole GPU suite and both sanitizers (12 shards), whose last H200 run was s90's,
# before the chain (an H100's in s93).
#   mkdir -p .carry/s93a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T4 > .carry/s93a/bins.tar.xz   # built at b907c39
#   CARRY=.carry/s93a bash bench/kernel/sessions/s95-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s95-run1
V=default
for k in 14 16 18; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
for dt in fp16 bf16; do
  RUN_TIMEOUT=80 run_variants kscan-$dt "$V" --heads 32/8 -b 256 -p 32768 -s 256 --dtype $dt
done
SHOW_LINES=12 show_variants kscan-fp16 kscan-bf16
run_offgrid_planner_checks
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 run_whole_suite
pack_logs
