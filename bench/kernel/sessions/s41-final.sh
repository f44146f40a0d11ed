#!/usr/bin/env bash
# Session 41, run 3 (nvidia-h200): the session's kept build (ROWSUM_BY_MMA at fp16 head_dim 64 and
# 256; UNIFORM_BASE everywhere but fp16 head_dim 64; head_dim 128's SASS identical to HEAD's).
# Binaries ($CARRY/bins.tar.xz): this build and the *_old kernel benchmark of f016cd6.
#   1. the kernel benchmark, old new old new: the issue's head_dim 64 / 256 rows;
#   2. the issue's 72 grid shapes (head_dim 128, fp16 and bf16) on this build, once;
#   3. GPU tests of this build: every head_dim 64 and 256 case (wgmma oracle, cascades, fused
#      cascades); compute-sanitizer memcheck and racecheck on a head_dim 256 fp16 wgmma case and a
#      head_dim 64 fp16 fused cascade (the new ones tile and its fence).
#   CARRY=.carry/s41c bash bench/kernel/sessions/s41-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s41-final
run_bench_ab "$OUT/dims" -d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
for dt in fp16 bf16; do
  timeout 150 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype $dt --no-baseline --no-graph -c 1 \
    --csv "$OUT/grid-$dt.csv" >"$OUT/grid-$dt.txt" 2>&1
  echo "grid $dt rc=$? $(grep 'wrong results' "$OUT/grid-$dt.txt")"
done
GPU_TESTS_TIMEOUT=${GPU_TESTS_TIMEOUT:-300} run_gpu_tests '*d64*:*d256*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
run_sanitizers '*PrefixAttentionKernelTest*wgmma_ManyItems_d256_fp16*:*CudaFusedCascadeTest*peaky_fp16_h8kv1_d64_p16*'
pack_logs
