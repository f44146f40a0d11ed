#!/usr/bin/env bash
# Session 4, run 17 (nvidia-h200-x4): does an NCCL setting move the 4-GPU strong step
# (P = 262144, 1 layer)? Each line one scaling-bench run on 4 GPUs with one setting, baseline
# first and last. Binaries: $BIN (carried). Output: $OUT/nccl-env.log.
set -uo pipefail
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/nccl-env}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
S="--mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 -n 20 --gpus 4"
for setting in "BASE=1" "NCCL_P2P_NVL_CHUNKSIZE=131072" "NCCL_P2P_NVL_CHUNKSIZE=1048576" "NCCL_MIN_P2P_NCHANNELS=8" \
               "NCCL_MAX_P2P_NCHANNELS=2" "NCCL_PROTO=LL128" "NCCL_P2P_USE_CUDA_MEMCPY=1" "BASE=2"; do
  echo "== $setting" >>"$OUT/nccl-env.log"
  timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 -x NCCL_NVLS_ENABLE=0 -x "$setting" \
    "$BIN/prefixd_scaling_bench" $S 2>&1 | grep -E "^strong|rror" >>"$OUT/nccl-env.log"
done
cat "$OUT/nccl-env.log"
