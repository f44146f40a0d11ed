#!/usr/bin/env bash
# Session 98, run 1, on .carry/s97a (e2d8660's binaries; the kernels of HEAD cbe9ecb, whose later
# commits changed a comment and scripts only). Whichever card comes does what is still unrun on it:
# on an H200 (the bar's card) s97-run1.sh's H200 branch — the grid and head_dim rows with the
# chained default (run_bar_grid), the headline's k scan and, before PLANNER_BEFORE_S (400), the
# planner checks; on an H100 s97-run2.sh — the whole GPU suite with both sanitizers' default lists
# on the chained default, nothing set in the environment.
#   mkdir -p .carry/s97a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s97a/bins.tar.xz   # built at e2d8660
#   CARRY=.carry/s97a bash bench/kernel/sessions/s98-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s98-run1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  run_h200_bar_checks
else
  PREFIXD_TIMEOUT_TESTS=280 run_whole_suite
  grep -h -E '^\[  FAILED  \] [A-Za-z]' "$OUT"/check/*.log | sed 's/ (.*//' | sort -u
fi
echo "elapsed ${SECONDS} s"
pack_logs
