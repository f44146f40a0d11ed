#!/usr/bin/env bash
# Session 76, run 1 (nvidia-h200): the measured choice (kernels::MeasuredPlanner, measured_choice.h;
# bench/ISSUE4.md lever 7). No kernel changed; the CUDA backend gained TimeUs.
#   1. the GPU tests of the planner, the cascade and the fused merge (8 shards; the two new tests:
#      CudaPlanner.TimeUsTimesOnlyItsOwnWork, CudaPlanner.MeasuredChoice...), memcheck on the new ones;
#   2. the engine tests on this GPU with NCCL (one rank; the worker times near ties by default on CUDA),
#      and the measured1 schedule, which times every alternative;
#   3. session 75's planner checks (81 fp16 + 32 bf16 off-grid shapes, the default grid's 60 + 60),
#      now with the measured choice's column: its plan timed like the others.
#   CARRY=.carry/s76a bash bench/kernel/sessions/s76-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s76-run1
run_test_shards '*CudaPlanner*:*CudaCascadeTest*:*CudaFusedMerge*'
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='CudaPlanner.TimeUs*:CudaPlanner.Measured*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
timeout 150 /tmp/b/prefixd_gpu_tests --gtest_filter='CudaPlanner.Measured*' 2>&1 | grep -E "measured\]|OK|FAILED" | head -12
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/mpi.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \] [A-Za-z]' "$OUT/mpi.log" | head -10
run_offgrid_planner_checks
pack_logs
