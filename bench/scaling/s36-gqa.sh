#!/usr/bin/env bash
# Session 36, run 5 (nvidia-h200-x2): the distributed engine at GQA groups no decode kernel is
# compiled for, on 2 GPUs. Carried: $CARRY/scal.tar.xz (prefixd_mpi_tests, whose engine tests now
# draw g = 3 and 5 as well; prefixd). Logs in $OUT, also $OUT/all.tgz.
#   1. the MPI tests on the CUDA backend / NCCL at 2 ranks;
#   2. the main job on 2 GPUs at 40/8 and 24/8 heads (its own sampled check against the unshared
#      computation).
# CARRY=.carry/s36e NP=2 OUT=... bash bench/scaling/s36-gqa.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scaling/device-setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
timeout 240 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*cuda*:*nccl*:*Cuda*:*Nccl*' --gtest_brief=1 \
  >"$OUT/mpi_np2.log" 2>&1
echo "mpi np2 rc=$?"; grep -E "test results|FAILED" "$OUT/mpi_np2.log" | tail -4
for h in 40/8 24/8; do
  timeout 150 $M /tmp/s/prefixd --qo-heads ${h%/*} --kv-heads ${h#*/} --doc-tokens 65536 --layers 4 \
    --questions 64 --decode-steps 8 >"$OUT/main-${h/\//-}.txt" 2>&1
  echo "main $h rc=$? $(grep -E '^# check: [0-9]+ of|^# done' "$OUT/main-${h/\//-}.txt" | tr '\n' ' ')"
done
tar -C "$OUT" -czf /tmp/s36-all.tgz --exclude=all.tgz . && mv /tmp/s36-all.tgz "$OUT/all.tgz"
