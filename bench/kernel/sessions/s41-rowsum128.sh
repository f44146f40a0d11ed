#!/usr/bin/env bash
# Session 41, run 5 (nvidia-h200): P's row sums by the tensor cores at fp16 head_dim 128 too, with the
# tile of ones as a 256-byte operand without swizzle (fits the deeper ring and the fused kernel,
# which the 2-KiB swizzled tile did not), at every head_dim.
# Binaries ($CARRY/bins.tar.xz): this build and run 3's kept binaries as *_old. Measured slower at
# head_dim 128 (+1.3-1.5% on compute-bound prefix parts) and not kept: the build needs
# results/s41/rowsum-d128.patch back to run again.
#   1. the prefix probe, old new, twice (a first shape to warm the clocks, not read);
#   2. the kernel benchmark, old new old new: the issue's 36 fp16 grid shapes;
#   3. the whole GPU suite of this build in 4 shards; memcheck on two cases with the new tile.
#   CARRY=.carry/s41e bash bench/kernel/sessions/s41-rowsum128.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s41-rowsum128
SHAPES=(--shape 32/8:256:8192 --shape 32/8:256:32768 --shape 32/32:256:32768 --shape 32/8:256:8192 --shape 32/8:64:32768
  --shape 32/8:256:32768:128:bf16 --shape 32/8:256:32768:64 --shape 32/8:256:32768:256)
run_probe_rounds "old new" --kernel wgmma --iters 20 "${SHAPES[@]}"
run_bench_ab "$OUT/grid" --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 330 /tmp/b/prefixd_gpu_tests --gtest_brief=1 >"$OUT/suite-$i.log" 2>&1 &
done
wait
echo "suite: $(grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT"/suite-*.log | tr '\n' ' ')"
grep -hE '^\[  FAILED' "$OUT"/suite-*.log | head -10
run_sanitizers '*PrefixAttentionKernelTest*wgmma_overlap_s3_ManyItems_d128_fp16*:*CudaFusedCascadeTest*b1_suffix1_fp16_h32kv32_d128_p16*'
pack_logs
