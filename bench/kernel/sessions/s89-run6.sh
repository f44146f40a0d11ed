#!/usr/bin/env bash
# Session 89, run 6: the final binaries (1b26ae0: k = 8-12 among the concurrent TMA step's
# candidates). On an H200 first the grid and head_dim rows (run_bar_grid). On any card then: the
# whole GPU suite and both sanitizers (launch/gpu-check.sh on the carried binaries, 12 shards), and
# session 75's planner checks (run_offgrid_planner_checks: the grid's 120 shapes and 113 off it,
# the measured choice against the cascade and plain decode).
# Carry .carry/s89c (ignored, local): 1b26ae0's prefixd_kernel_bench, prefixd_gpu_tests, prefixd:
#   mkdir -p .carry/s89c && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s89c/bins.tar.xz
#   CARRY=.carry/s89c bash bench/kernel/sessions/s89-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run6
run_bar_grid
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=240 run_whole_suite
run_offgrid_planner_checks
pack_logs
