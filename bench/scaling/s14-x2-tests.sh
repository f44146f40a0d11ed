#!/usr/bin/env bash
# Session 14, one nvidia-h200-x2 call: the whole single-GPU suites (prefixd_gpu_tests on GPU 0,
# prefixd_unit_tests on GPU 1), then the NCCL/CUDA MPI tests at 2 ranks. Binaries carried as
# $CARRY/scal.tar.xz. Logs: $OUT/*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s14-x2}
NP=2
. bench/scaling/device-setup.sh
# The two single-GPU suites side by side, one GPU each.
CUDA_VISIBLE_DEVICES=0 timeout 280 /tmp/s/prefixd_gpu_tests --gtest_brief=1 >"$OUT/prefixd_gpu_tests.log" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 280 /tmp/s/prefixd_unit_tests --gtest_brief=1 >"$OUT/prefixd_unit_tests.log" 2>&1
echo "prefixd_unit_tests rc=$?"; wait $!; echo "prefixd_gpu_tests rc=$?"
for t in prefixd_gpu_tests prefixd_unit_tests; do
  echo "$t:"; grep -E "^\[  (PASSED|FAILED|SKIPPED) *\]|FAILED" "$OUT/$t.log" | head -8
done
timeout 200 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*cuda*:*nccl*:*Cuda*:*Nccl*' --gtest_brief=1 >"$OUT/mpi_np2.log" 2>&1
echo "mpi np2 rc=$?"; grep -E "test results|FAILED" "$OUT/mpi_np2.log" | tail -4
