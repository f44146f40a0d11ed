#!/usr/bin/env bash
# Session 84, run 5 (one GPU): the main job on its embedded default (the README's first command's
# job: a 131072-token document, 64 questions, 32 steps, 32 layers, 32/8 heads, bf16) on one rank,
# and the engine's MPI tests with the CUDA backend on one rank, from this tree's binaries.
#   mkdir -p .carry/s84m && tar -C build -cJf .carry/s84m/bins.tar.xz --transform 's,.*/,./,' \
#     launch/prefixd tests/prefixd_mpi_tests
#   CARRY=.carry/s84m bash bench/kernel/sessions/s84-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s84-run5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 240 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd >"$OUT/main.log" 2>&1
echo "main job rc=$?"; grep -E "^# (done|plans|memory|check: [0-9])" "$OUT/main.log" | tail -6
timeout 150 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results' "$OUT/mpi.log")"
pack_logs
