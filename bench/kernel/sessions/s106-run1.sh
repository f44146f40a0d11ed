#!/usr/bin/env bash
# Not run in session 106: calls 2-13 started no machine (eight failed starts, four refusals), then loans paused.
# Session 106, run 1, on .carry/s106a (c466baf's binaries: session 104's half-warp merge removed
# after session 106's first call, s104-run3.sh on an H100, timed it no faster; the default path is
# session 105's), asked for as nvidia-h200, any card:
# - the merge, concurrent and 16-bit GPU tests (the two test files the removal touched), then
#   memcheck on the merge tests;
# - on an H200 only: the bar checks on the default (the grid and its head_dim rows, the headline's
#   k scan, the planner checks while under 200 s): the first bar figures since session 94, on the
#   16-bit states of session 99 and the head_dim-256 chain of session 96.
#   ninja -C build -j3 bench/prefixd_kernel_bench tests/prefixd_gpu_tests launch/prefixd && \
#     mkdir -p /tmp/carry106a .carry/s106a && cp build/bench/prefixd_kernel_bench \
#     build/tests/prefixd_gpu_tests build/launch/prefixd /tmp/carry106a/ && \
#     tar -C /tmp/carry106a -cf - . | xz -6 -T2 > .carry/s106a/bins.tar.xz
#   CARRY=.carry/s106a bash bench/kernel/sessions/s106-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s106-run1
run_gpu_tests 'CudaMergeStates*:*MergeStates*:CudaConcurrentCascade.*'
MEMCHECK_TIMEOUT=60 run_memcheck 'CudaMergeStates.*'
if on_h200; then PLANNER_BEFORE_S=200 run_h200_bar_checks; else echo "not an H200: no bar checks"; fi
echo "elapsed ${SECONDS} s"
pack_logs
