#!/usr/bin/env bash
# Session 35, one nvidia-h200-x2 call: the final merge of the distributed step rewritten
# (worker/cuda/worker_ops.cu, MergeExchangedStatesKernel: each lane holds one contribution's
# source, LSE and weight; the v rows loaded independently) against the binaries before it.
# Carried: $CARRY/scal.tar.xz (new: prefixd_merge_bench, prefixd_scaling_bench, prefixd_mpi_tests,
# prefixd_gpu_tests) and $CARRY_A/scal.tar.xz (the same three tools built from HEAD's worker).
#   1. the new kernel's GPU tests against a float64 merge, and compute-sanitizer memcheck on them;
#   2. prefixd_merge_bench A B A B (the merge alone at the 2-, 4- and 8-GPU shapes);
#   3. the strong P = 262144 1-layer row on 1 and 2 GPUs, A B A B (prefixd_scaling_bench);
#   4. the NCCL/CUDA MPI tests at 2 ranks with the new binaries.
# Output: $OUT/*.log, *.csv, and all of them in $OUT/all.tgz (the device returns a few files only;
# call 1 returned 8 of 15 and its stdout: results/s35/call1-output.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/s35}
NP=2
CARRY_A=${CARRY_A:?set CARRY_A to the directory holding the old binaries scal.tar.xz}
. bench/scaling/device-setup.sh
mkdir -p /tmp/a && tar -C /tmp/a -xJf "$CARRY_A/scal.tar.xz"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
F='*MergeExchanged*'
timeout 120 /tmp/s/prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$F" >"$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/s/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter="$F" >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
for r in 1 2; do
  for v in a s; do
    timeout 60 /tmp/$v/prefixd_merge_bench --gpus 2,4,8 >"$OUT/merge-$v$r.log" 2>&1
    echo "merge $v$r rc=$?"; grep -v '^#' "$OUT/merge-$v$r.log"
  done
done
B="prefixd_scaling_bench --batch 128 --suffix 512 --mode strong --prefix 262144 --layers 1 --gpus 1,2 --reduction a2a"
for r in 1 2; do
  for v in a s; do
    timeout 90 $M /tmp/$v/$B --csv "$OUT/strong-$v$r.csv" >"$OUT/strong-$v$r.log" 2>&1
    echo "strong $v$r rc=$?"; row "$OUT/strong-$v$r.csv"
  done
done
timeout 200 $M /tmp/s/prefixd_mpi_tests --gtest_filter='*cuda*:*nccl*:*Cuda*:*Nccl*' --gtest_brief=1 \
  >"$OUT/mpi_np2.log" 2>&1
echo "mpi np2 rc=$?"; grep -E "test results|FAILED" "$OUT/mpi_np2.log" | tail -4
tar -C "$OUT" -czf /tmp/s35-all.tgz --exclude=all.tgz . && mv /tmp/s35-all.tgz "$OUT/all.tgz"
