#!/usr/bin/env bash
# Session 86, runs 3 and 4 (the same H100 as runs 1-2, the last of the device budget): the main job
# on one GPU and the engine's and comm's CUDA / NCCL MPI tests on one rank, from .carry/s86's
# prefixd and prefixd_mpi_tests (s86-run1.sh's header). As run, they were two inline commands:
#   run 3: timeout 90 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd
#   run 4: timeout 95 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests \
#            --gtest_filter='*cuda*:*nccl*:*Cuda*:*Nccl*'
# (run 4's 95 s let 236 of 282 tests finish); this script is the same pair through the helper.
#   CARRY=.carry/s86 bash bench/kernel/sessions/s86-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s86-run4
run_main_job_one_rank '*cuda*:*nccl*:*Cuda*:*Nccl*' 90 "${MPI_TIMEOUT:-300}"
pack_logs
