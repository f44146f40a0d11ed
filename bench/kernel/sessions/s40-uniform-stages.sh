#!/usr/bin/env bash
# Session 40, run 2 (nvidia-h200): at head_dim 128, the shared-memory base and the ring stages of a
# turn's wgmma groups as warp-uniform values too (WarpUniform; WgmmaPrefixConfig::UNIFORM_HINTS),
# so that K's and V's descriptors are built in uniform registers (turn 326 -> 300 SASS lines).
# Binaries ($CARRY/bins.tar.xz): this build and the *_old binaries of run 1's kept build (2214977).
#   1. the kernel benchmark, old new old new: the issue's 36 fp16 grid shapes, then the 36 bf16 ones;
#   2. GPU tests: every wgmma oracle case but head_dim 64 / 256 (unchanged code there), the
#      cascades and the fused cascade; compute-sanitizer on two cases.
#   CARRY=.carry/s40b bash bench/kernel/sessions/s40-uniform-stages.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s40-uniform-stages
GRID=(--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT" "${GRID[@]}" --dtype fp16
run_bench_ab "$OUT/bf16" "${GRID[@]}" --dtype bf16
GPU_TESTS_TIMEOUT=240 run_gpu_tests '*PrefixAttentionKernelTest*wgmma*:*CudaCascadeTest*:*FusedCascade*-*d64*:*d256*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
run_sanitizers '*PrefixAttentionKernelTest*wgmma_ManyItems_d128_fp16*:*CudaFusedCascadeTest*mixed_groups_bf16_h4kv2_d128*'
pack_logs
