#!/usr/bin/env bash
# Session 100, run 8, on .carry/s100f (the final code; the 16-bit merge test now launches its merge
# on the backend's stream, behind the outputs' poison fill, which it had raced in run 7's whole
# suite). (1) On an H200 (the bar's card), first: the bar grid and head_dim rows and the
# headline's k scan (no planner checks: PLANNER_BEFORE_S=0). (2) That test three times. (3) The
# whole GPU suite (8 shards).
#   mkdir -p /tmp/carry100f && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry100f/ && mkdir -p .carry/s100f && \
#     tar -C /tmp/carry100f -cf - . | xz -6 -T2 > .carry/s100f/bins.tar.xz
#   CARRY=.carry/s100f bash bench/kernel/sessions/s100-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run8
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PLANNER_BEFORE_S=0 run_h200_bar_checks
fi
timeout 60 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_repeat=3 --gtest_filter='CudaMergeStates.SixteenBit*' \
  >"$OUT/repeat.log" 2>&1
echo "repeat x3 rc=$? $(grep -cE '^\[  PASSED  \] 1 test' "$OUT/repeat.log") of 3 passed"
run_whole_suite
echo "elapsed ${SECONDS} s"
pack_logs
