#!/usr/bin/env bash
# Session 103, run 1, on .carry/s103a (HEAD's binaries: the kernels of adb2d5a, the new GPU test
# CudaCascade.BatchOfEmptyRequestsOnlyGetsEmptyStates), asked for as nvidia-h200, any card: first
# the CUDA path of a plan with no items and no states (session 102's CPU mend had not run on a GPU)
# with its neighbours, plain and under memcheck (5-8 s on an H100); then on an H200 only the bar
# checks of s102-run3.sh (the grid, the head_dim rows, the headline's k scan on the 16-bit default,
# ~150 s).
#   CARRY=.carry/s103a bash bench/kernel/sessions/s103-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s103-run1
run_gpu_tests 'CudaCascade.*Empty*:CudaMergeState*Empty*'
run_memcheck 'CudaCascade.*Empty*'
if on_h200; then PLANNER_BEFORE_S=0 run_h200_bar_checks; else echo "not an H200: no bar checks"; fi
echo "elapsed ${SECONDS} s"
pack_logs
