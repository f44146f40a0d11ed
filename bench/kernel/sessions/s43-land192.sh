#!/usr/bin/env bash
# Session 43, run 1 (nvidia-h200): landing head_dim 64's 192-token K/V tiles (session 42's
# tile192-ready.patch as constants; fp16's row sums by FADD at head_dim 64; the fused kernel pinned
# to 128-token tiles). Binaries ($CARRY/bins.tar.xz): this build, and *_old = the kernels of
# b22fab3 (session 41, HEAD before this change).
#   1. the prefix probe, old new, twice, head_dim 64 (and the head_dim 128 control);
#   2. the kernel benchmark, old new old new: the issue's head_dim 64 and 256 rows;
#   3. the main job at head_dim 64 (one GPU, its own sampled check);
#   4. the whole GPU suite (launch/gpu-check.sh: 4 shards, its default memcheck / racecheck
#      subsets), then compute-sanitizer on five head_dim 64 cases of the 192-token tiles.
#   CARRY=.carry/s43a bash bench/kernel/sessions/s43-land192.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-land192
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:64:32768:64 --shape 32/8:256:32768:64:bf16)
run_probe_rounds "old new" --kernel wgmma --iters 20 "${SHAPES[@]}"
run_bench_ab "$OUT/dims" -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for dt in fp16 bf16; do
  timeout 120 mpirun --allow-run-as-root -np 1 /tmp/b/prefixd --qo-heads 32 --kv-heads 8 --head-dim 64 --dtype $dt \
    --doc-tokens 32768 --layers 4 --decode-steps 8 >"$OUT/main-d64-$dt.txt" 2>&1
  echo "main d64 $dt rc=$? $(grep -E '^# check: [0-9]+ of|^# done' "$OUT/main-d64-$dt.txt" | tr '\n' ' ')"
done
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh | tail -8
run_sanitizers '*wgmma_Flat_fp16_d64_g4:*wgmma_overlap_s3_ManyItems_d64_bf16:*wgmma_ManyItems_d64_fp16:*wgmma_PoisonShortPrefix_d64_fp16:*wgmma_PoisonGroups_page7_d64_bf16:*CudaFusedCascadeTest*peaky_bf16_h16kv2_d64_p16'
pack_logs
