#!/usr/bin/env bash
# Session 11, nvidia-h200-x4: strong scaling (issue 3's configuration) and the NCCL MPI tests at 4 ranks.
# Binaries carried as .carry/s11/scal.tar.xz (prefixd_scaling_bench, prefixd_mpi_tests); logs: bench/scaling/results/s11/.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s11-x4}
mkdir -p /tmp/s "$OUT" && tar -C /tmp/s -xJf .carry/s11/scal.tar.xz
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
M="mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE=0 -np 4"
nvidia-smi -L
timeout 200 $M /tmp/s/prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 --reduction both --csv $OUT/strong.csv > $OUT/strong.log 2>&1; echo "strong rc=$?"; grep -v "^#" $OUT/strong.csv | head -12
timeout 100 $M /tmp/s/prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 --reduction a2a --csv $OUT/strong2.csv > $OUT/strong2.log 2>&1; echo "strong again rc=$?"; grep -v "^#" $OUT/strong2.csv | head -6
timeout 280 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*cuda*:*Cuda*:*nccl*:*Nccl*' > $OUT/mpi_np4.log 2>&1; echo "mpi np4 rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" $OUT/mpi_np4.log | head -5
