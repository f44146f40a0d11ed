#!/usr/bin/env bash
# Session 79, run 2 (nvidia-h200; not lent in session 79, for a next session, after run 1 and any
# default it changes): the final binaries' numbers, as session 78's run 4 would have measured its
# own (s78 had no machine for it; these binaries hold s78's decode epilogue too):
#   1. the issue's grid and head_dim rows (issue4-grid.sh: the measured choice, read floors);
#   2. the engine's tests on this GPU with NCCL (1 rank).
# Then s79-run3.sh (the whole GPU suite with both sanitizers) and s78-run5.sh (the planner's
# off-grid checks) on the same carry: three calls, each well inside the 600 s a call may take.
#   CARRY=.carry/s79a bash bench/kernel/sessions/s79-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s79-run2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results' "$OUT/mpi.log")"
pack_logs
