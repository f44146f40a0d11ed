#!/usr/bin/env bash
# One nvidia-h200-x4 call: strong scaling at the distributed engine issue's configuration (P = 262144,
# B = 128, S = 512, 1 layer; both reductions, then STRONG_REPEATS − 1 more all-to-all samples) and
# the NCCL/CUDA MPI tests at 4 ranks. Binaries carried as $CARRY/scal.tar.xz (prefixd_scaling_bench,
# prefixd_mpi_tests).
#   session 10 (bench/scaling/results/s10/): CARRY=.carry/s10
#   session 11 (bench/scaling/results/s11/): CARRY=.carry/s11 STRONG_REPEATS=2
#   session 12 (bench/scaling/results/s12/): CARRY=.carry/s12a STRONG_REPEATS=2
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/x4-sample}
NP=4
. bench/scaling/device-setup.sh
STRONG="/tmp/s/prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1"
nvidia-smi -L
timeout 200 $M $STRONG --reduction both --csv "$OUT/strong.csv" >"$OUT/strong.log" 2>&1
echo "strong rc=$?"; grep -v "^#" "$OUT/strong.csv" | head -12
for i in $(seq 2 "${STRONG_REPEATS:-1}"); do
  timeout 100 $M $STRONG --reduction a2a --csv "$OUT/strong$i.csv" >"$OUT/strong$i.log" 2>&1
  echo "strong sample $i rc=$?"; grep -v "^#" "$OUT/strong$i.csv" | head -6
done
timeout 280 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*cuda*:*Cuda*:*nccl*:*Nccl*' >"$OUT/mpi_np4.log" 2>&1
echo "mpi np4 rc=$?"; grep -E "PASSED|FAILED|SKIPPED|test results" "$OUT/mpi_np4.log" | tail -5
