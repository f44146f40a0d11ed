#!/usr/bin/env bash
# The eight-GPU issue's runs on nvidia-h200-x8, in priority order, in one or two calls
# (PART=A: strong P = 262144 at 1 and 32 layers, the NCCL MPI tests at 8 ranks, strong
# P = 1048576 at 1 layer; PART=B: strong P = 1048576 at 32 layers on 2-8 GPUs, weak at 1 and 32
# layers). B = 128, S = 512, bf16, 32/8 heads, both state reductions where the issue asks for the
# exposed communication of both. Every N-GPU row is checked against the 1-GPU outputs (or the
# single-rank computation of --check requests where no 1-GPU row fits). Binaries carried as
# $CARRY/scal.tar.xz (prefixd_scaling_bench, prefixd_mpi_tests). CSVs and logs come back as
# $OUT/x8-$PART.tgz.
#   session 13 (bench/scaling/results/s13/x8/): CARRY=.carry/s13 PART=A, then PART=B
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/x8-full}
PART=${PART:-A}
NP=8
. bench/scaling/device-setup.sh
W=$(mktemp -d)
B="/tmp/s/prefixd_scaling_bench --batch 128 --suffix 512"
nvidia-smi -L | wc -l
run() {  # name timeout args...
  local name=$1 t=$2; shift 2
  timeout "$t" $M $B "$@" --csv "$W/$name.csv" >"$W/$name.log" 2>&1
  echo "$name rc=$?"; [ -f "$W/$name.csv" ] && row "$W/$name.csv"
}
if [ "$PART" = A ]; then
  run strong-262k-l1 80 --mode strong --prefix 262144 --layers 1 --gpus 1,2,4,8 --reduction both
  timeout 170 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*EvenSplit*cuda*:*EvenOwners*cuda*:*UnevenSplit*cuda*:*MoreRanks*cuda*:*SeveralPrefixes*cuda*:*JoinLeave*cuda_a2a*' >"$W/mpi_np8.log" 2>&1
  echo "mpi np8 rc=$?"; grep -E "test results|FAILED" "$W/mpi_np8.log" | tail -3
  run strong-262k-l32 120 --mode strong --prefix 262144 --layers 32 --gpus 1,2,4,8 --reduction both -n 10 -w 3
  run strong-1m-l1 90 --mode strong --prefix 1048576 --layers 1 --gpus 1,2,4,8 --reduction both
else
  run strong-1m-l32 200 --mode strong --prefix 1048576 --layers 32 --gpus 2,4,8 --reduction both -n 8 -w 2
  run weak-l1 60 --mode weak --prefix-per-gpu 131072 --layers 1 --gpus 1,2,4,8 --reduction both
  run weak-l32 120 --mode weak --prefix-per-gpu 131072 --layers 32 --gpus 1,2,4,8 -n 10 -w 3
  # The NCCL MPI tests that part A's time limit left out (part A ran EvenSplit and part of
  # EvenOwnersGatherQueries at 8 ranks).
  timeout 130 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*EvenOwners*cuda_a2a_layout1:*EvenOwners*cuda_tree_chunks1:*UnevenSplit*cuda_*1:*MoreRanks*cuda_*1:*SeveralPrefixes*cuda_*1' >"$W/mpi_np8_b.log" 2>&1
  echo "mpi np8 (part B) rc=$?"; grep -E "test results|FAILED" "$W/mpi_np8_b.log" | tail -3
fi
tar -C "$W" -czf "$OUT/x8-$PART.tgz" .
