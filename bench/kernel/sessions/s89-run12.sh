#!/usr/bin/env bash
# Session 89, run 12: the final binaries (a36a9dc: k = 8-12 among the concurrent TMA step's
# candidates, the mode at head_dim 64). On an H200 first the grid and head_dim rows
# (run_bar_grid; the 32/8 D64 rows now run the mode). On any card then the concurrent, planner,
# measured-choice and cascade GPU tests (8 shards) and the main job on one rank.
# Carry .carry/s89f (ignored, local): a36a9dc's prefixd_kernel_bench, prefixd_gpu_tests, prefixd:
#   mkdir -p .carry/s89f && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s89f/bins.tar.xz
#   CARRY=.carry/s89f bash bench/kernel/sessions/s89-run12.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run12
run_bar_grid
run_test_shards 'CudaConcurrent*:*Planner*:*Measured*:CudaCascade*'
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 150 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd >"$OUT/main.log" 2>&1
echo "main job rc=$?"; grep -E "^# (done|plans|check: [0-9])" "$OUT/main.log" | tail -4
pack_logs
