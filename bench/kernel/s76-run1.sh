#!/usr/bin/env bash
# Session 76, run 1 (nvidia-h200): the measured choice (kernels::MeasuredPlanner, measured_choice.h;
# bench/ISSUE4.md lever 7). No kernel changed; the CUDA backend gained TimeUs.
#   1. the GPU tests of the planner, the cascade and the fused merge (8 shards; the two new tests:
#      CudaPlanner.TimeUsTimesOnlyItsOwnWork, CudaPlanner.MeasuredChoice...), memcheck on the new ones;
#   2. the engine tests on this GPU with NCCL (one rank; the worker times near ties by default on CUDA),
#      and the measured1 schedule, which times every alternative;
#   3. session 75's planner checks (81 fp16 + 32 bf16 off-grid shapes, the default grid's 60 + 60),
#      now with the measured choice's column: its plan timed like the others.
#   CARRY=.carry/s76a bash bench/kernel/s76-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
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
# check NAME ARGS...: the planner check, its summary lines and the rows over 5%
check() { local name=$1; shift; timeout 200 $B --planner-check "$@" >"$OUT/$name.txt" 2>&1; local rc=$?
  echo "== planner $name rc=$rc, $(grep -cE '^ +(fp16|bf16) ' "$OUT/$name.txt") shapes"
  grep -E "planner check:|measured choice" "$OUT/$name.txt" | grep -v "must be"
  grep -E "SLOW|WRONG" "$OUT/$name.txt" | grep -E '^ +(fp16|bf16) ' | head -20; }
check odd-fp16 --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 -s 1,100,1000
check odd-bf16 --dtype bf16 --heads 16/2,24/8 -d 64,256 -b 3,100 -p 1000,12344 -s 7,300 --page-size 8
check grid-fp16 --dtype fp16
check grid-bf16 --dtype bf16
pack_logs
