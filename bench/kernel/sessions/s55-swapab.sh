#!/usr/bin/env bash
# Session 55, run 1 (nvidia-h200): the swap-AB online softmax now shared by the TMA decode's tiles
# and the fused kernel's suffix warps (kernels/cuda/sm90a/swap_ab_softmax.cuh), against the build
# before (prefixd_kernel_bench_old, commit 133e89f's kernels):
#   1. A/B, old new old new in separate processes: the planner's concurrent TMA-decode shapes
#      (32/8 D128 B128/256 P8192/32768 S256, fp16 and bf16); the forced TMA decode on 36 SMs at
#      GQA 4 and 8, D64/128; the fused kernel (PREFIXD_FUSED=1) at D64/128;
#   2. the GPU tests of both kernels and of the concurrent mode in 4 shards; memcheck and racecheck
#      on a fused case, a TMA-decode variant and the planner's TMA-decode test.
#   CARRY=.carry/s55a bash bench/kernel/sessions/s55-swapab.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-swapab
run_bench_ab "$OUT/planner" -d 128 --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
PREFIXD_CONCURRENT_DECODE_SMS=36 PREFIXD_DECODE_PERSISTENT=1 PREFIXD_DECODE_TMA=1 \
  run_bench_ab "$OUT/forced" --head-dim 64,128 --heads 32/8,64/8 -b 64,256 -p 8192 -s 256,1024 --dtype fp16 --no-baseline --no-graph -c 1
PREFIXD_FUSED=1 run_bench_ab "$OUT/fused" --head-dim 64,128 --heads 32/8,32/32 -b 64,256 -p 8192 -s 256 --dtype fp16,bf16 \
  --no-baseline --no-graph -c 1
for d in planner forced fused; do
  echo "== $d: suffix part alone, old1 new1 old2 new2 (us)"
  paste -d, "$OUT/$d/old1.csv" "$OUT/$d/new1.csv" "$OUT/$d/old2.csv" "$OUT/$d/new2.csv" | awk -F, -v n=32 \
    'NR>1 {printf "%s %s/%s D%s B%s P%s S%s |", $1, $3, $4, $5, $6, $7, $8; for (i = 0; i < 4; ++i) printf " %6.1f", $(i*n+14); printf "\n"}'
done
pids=()
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 240 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
    --gtest_filter='*FreeSms*:*TmaDecode*:*Fused*:*CudaConcurrent*:*NaNOutside*:*CudaDecodeVariantTest*' >"$OUT/tests-$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2 3; do wait "${pids[$i]}"; echo "tests shard $i rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests-$i.log" | tr '\n' ' ')"; done
grep -hE '^\[  FAILED  \] [A-Za-z]' "$OUT"/tests-*.log | sed 's/ (.*//' | sort -u | head -20
run_sanitizers '*CudaFusedCascadeTest*mixed_groups*:*CudaDecodeVariantTest*warps8_pdl_persistent_tma:CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms'
pack_logs
