#!/usr/bin/env bash
# Session 101, run 1, on .carry/s101a (HEAD adb2d5a's binaries: session 100's final code, the 16-bit
# concurrent states the default, the 8-warp TMA-decode candidate in the measured choice).
# (1) On an H200 (the bar's card), first: the bar grid and head_dim rows and the headline's k scan
# (no planner checks: PLANNER_BEFORE_S=0), then the whole GPU suite without sanitizers. (2) On any
# other card: the whole GPU suite (8 shards) with the default sanitizer lists (memcheck, racecheck),
# which session 100's last run had cut during racecheck.
#   mkdir -p /tmp/carry101a && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry101a/ && mkdir -p .carry/s101a && \
#     tar -C /tmp/carry101a -cf - . | xz -6 -T2 > .carry/s101a/bins.tar.xz
#   CARRY=.carry/s101a bash bench/kernel/sessions/s101-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s101-run1
if on_h200; then
  PLANNER_BEFORE_S=0 run_h200_bar_checks
  PREFIXD_SKIP_SANITIZER=1 PREFIXD_TIMEOUT_TESTS=$((570 - SECONDS)) run_whole_suite
else
  PREFIXD_TIMEOUT_MEMCHECK=240 PREFIXD_TIMEOUT_RACECHECK=240 PREFIXD_TIMEOUT_TESTS=150 run_whole_suite
fi
echo "elapsed ${SECONDS} s"
pack_logs
