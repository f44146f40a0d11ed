#!/usr/bin/env bash
# Session 102, run 2, on .carry/s101a (HEAD's binaries: no kernel has changed since adb2d5a), asked
# for as nvidia-h200 (H100 or H200), ~150 s. (1) On an H200 (the bar's card): the bar grid, the
# head_dim rows and the headline's k scan on the 16-bit default, no planner checks (s101-run3.sh's
# H200 branch; its H100 branch ran as s102 run 1). (2) On an H100: only the headline's k scan
# (32/8 B256 P32768 S256, the chained step's k forced to 14, 16, 18 against the default, fp16 and
# bf16), the H100's table for the 16-bit default, ~90 s.
#   CARRY=.carry/s101a bash bench/kernel/sessions/s102-run2.sh
#   (the carry, as in s101-run1.sh: build/bench/prefixd_kernel_bench, build/tests/prefixd_gpu_tests
#    and build/launch/prefixd tarred with xz into .carry/s101a/bins.tar.xz)
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s102-run2
if on_h200; then PLANNER_BEFORE_S=0 run_h200_bar_checks; else run_headline_kscan; fi
echo "elapsed ${SECONDS} s"
pack_logs
