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
run_main_job_one_rank '*cuda*'
pack_logs
