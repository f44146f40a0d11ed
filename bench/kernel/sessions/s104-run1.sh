#!/usr/bin/env bash
# Session 104, run 1 (never ran: no device came; s104-run3.sh runs its tests), on .carry/s104a
# (HEAD a87eb19's binaries: the kernels of adb2d5a, unchanged; the GPU empty-request tests after
# the ExpectEmptyStates refactor, which ran only on the CPU
# stand-in in session 103), asked for as nvidia-h200, any card: first the empty-state tests with
# their neighbours, plain and under memcheck (~7 s on an H100); then on an H200 only the bar checks
# of s102-run3.sh (the grid, the head_dim rows, the headline's k scan on the 16-bit default, ~150 s).
#   CARRY=.carry/s104a bash bench/kernel/sessions/s104-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s104-run1
run_gpu_tests 'CudaCascade.*Empty*:CudaMergeState*Empty*'
run_memcheck 'CudaCascade.*Empty*'
if on_h200; then PLANNER_BEFORE_S=0 run_h200_bar_checks; else echo "not an H200: no bar checks"; fi
echo "elapsed ${SECONDS} s"
pack_logs
