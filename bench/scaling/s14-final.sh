#!/usr/bin/env bash
# Session 14's final runs, one call per machine (binaries carried as $CARRY/scal.tar.xz:
# prefixd_scaling_bench, prefixd_mpi_tests). Output: $OUT/$TAG-$PART.tgz (CSVs and logs).
#   PART=x4 (nvidia-h200-x4): the distributed engine issue's rows: strong P = 262144 on 1-4 GPUs
#     (both reductions, then an all-to-all repeat), weak 131072 per GPU, the exposed communication
#     at P = 65536 × 32 layers on 4 GPUs, and NCCL/CUDA MPI tests at 4 ranks.
#   PART=x8 (nvidia-h200-x8): the eight-GPU issue's rows: strong P = 262144 at 1 and 32 layers,
#     weak 131072 per GPU, strong P = 1048576 at 1 layer, and NCCL/CUDA MPI tests at 8 ranks.
# B = 128, S = 512, bf16, 32/8 heads, head_dim 128, page 16, host one step ahead.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s14-final}
TAG=${TAG:-s14}  # the archive name: $OUT/$TAG-$PART.tgz (session 16: TAG=s16)
PART=${PART:?set PART to x4 or x8}
NP=$([ "$PART" = x8 ] && echo 8 || echo 4)
. bench/scaling/device-setup.sh
W=$(mktemp -d)
B="/tmp/s/prefixd_scaling_bench --batch 128 --suffix 512"
run() {  # name timeout args...
  local name=$1 t=$2; shift 2
  timeout "$t" $M $B "$@" --csv "$W/$name.csv" >"$W/$name.log" 2>&1
  echo "$name rc=$?"; [ -f "$W/$name.csv" ] && row "$W/$name.csv"
}
mpi() {  # timeout filter
  timeout "$1" $M /tmp/s/prefixd_mpi_tests --gtest_filter="$2" >"$W/mpi_np$NP.log" 2>&1
  echo "mpi np$NP rc=$?"; grep -E "test results|FAILED" "$W/mpi_np$NP.log" | tail -4
}
TESTS='*CommTest*nccl*:*cuda_a2a_chunks1:*cuda_a2a_sendfirst1:*cuda_tree_chunks1:*cuda_a2a_layout1:*cuda_a2a_behind1'
if [ "$PART" = x4 ]; then
  run strong 120 --mode strong --prefix 262144 --layers 1 --gpus 1,2,3,4 --reduction both
  run strong-a2a2 90 --mode strong --prefix 262144 --layers 1 --gpus 1,2,3,4 --reduction a2a
  run weak 90 --mode weak --prefix-per-gpu 131072 --layers 1 --gpus 1,2,3,4
  run exposed 120 --mode strong --prefix 65536 --layers 32 --gpus 4 -n 10 -w 3
  mpi 200 "$TESTS"
else
  run strong-262k-l1 90 --mode strong --prefix 262144 --layers 1 --gpus 1,2,4,8 --reduction both
  run strong-262k-l32 120 --mode strong --prefix 262144 --layers 32 --gpus 1,2,4,8 --reduction a2a -n 10 -w 3
  run weak-l1 60 --mode weak --prefix-per-gpu 131072 --layers 1 --gpus 1,2,4,8
  run strong-1m-l1 90 --mode strong --prefix 1048576 --layers 1 --gpus 1,2,4,8 --reduction a2a
  mpi 150 "$TESTS"
fi
tar -C "$W" -czf "$OUT/$TAG-$PART.tgz" .
