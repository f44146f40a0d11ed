#!/usr/bin/env bash
# Session 76, run 7 (nvidia-h200): run 3's serving-path A/B again after the fix it led to. Run 3
# found steps of 15-19 ms with the measured choice and fresh plans (0.85 ms without); runs 4-6
# (diagnostics, .carry/dbg scripts, not kept) traced it to the host: the layout choice's report
# planned plain decode of the 262144-token prefix for 128 requests (26 ms) at every plan. Now it
# does not where the plan's lower bound already loses.
#   1. the distributed step on one GPU (prefixd_scaling_bench, strong, P 262144, B 128, S 512, 32/8,
#      bf16, 1 layer) with the measured choice off / on, twice each, steady and fresh plans;
#   2. the planner's GPU tests and the engine tests on this GPU with NCCL on these final binaries.
#   CARRY=.carry/s76d bash bench/kernel/s76-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/kernel/device-setup.sh s76-run7
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
S=/tmp/b/prefixd_scaling_bench
for round in 1 2; do for plans in steady fresh; do for mc in 0 1; do
  extra=""; [ $plans = fresh ] && extra=--fresh-plans
  name=scaling-$plans-mc$mc-$round
  PREFIXD_MEASURED_CHOICE=$mc timeout 100 mpirun --allow-run-as-root -np 1 $S --mode strong --gpus 1 -n 40 -w 5 \
    $extra --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(tail -n +2 "$OUT/$name.csv" | head -1 | cut -c1-160)"
done; done; done
head -1 "$OUT/scaling-steady-mc0-1.csv"
run_gpu_tests '*CudaPlanner*:*CudaCascadeTest*'
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results' "$OUT/mpi.log")"
pack_logs
