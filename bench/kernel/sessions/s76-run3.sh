#!/usr/bin/env bash
# Session 76, run 3 (nvidia-h200): the measured choice in the serving path, and the final binaries.
#   1. the distributed step on one GPU (prefixd_scaling_bench, strong, P 262144, B 128, S 512, 32/8,
#      bf16, 1 layer) with the measured choice off / on, twice each, with the kept plans advanced in
#      place (the default) and with every step planned afresh (--fresh-plans: the planner's host cost
#      every step);
#   2. on these final binaries (host code changed since run 2: the out-of-memory fallback, comments),
#      the planner's GPU tests and the engine tests on this GPU with NCCL again (the whole suite
#      passed on run 2's; no kernel changed this session).
#   CARRY=.carry/s76c bash bench/kernel/sessions/s76-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s76-run3
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
