#!/usr/bin/env bash
# Session 39, run 6 (nvidia-h200): the wgmma descriptors as one base per tile plus an add per
# k-step (DescriptorPlus, kernels/cuda/sm90a/sm90a_primitives.cuh), alone: run 5 (s39-turn.sh)
# measured it together with O's rescale moved out of the turn, which is reverted (head_dim 64 +5%;
# patch results/s39/rescale-after-softmax.patch). Binaries ($CARRY/bins.tar.xz): this build and the
# *_old binaries of HEAD.
#   1. the kernel benchmark, old new old new: the issue's 36 fp16 grid shapes and its 16 head_dim
#      64/256 rows; A/B tables;
#   2. GPU tests: the wgmma kernel's oracle cases at every head_dim and dtype (flat, peaky, poisoned
#      groups, many items, the narrow CTA), the cascades and the fused cascade (which shares the
#      wgmma calls); compute-sanitizer on three cases.
#   CARRY=.carry/s39a bash bench/kernel/sessions/s39-descriptors.sh
# (Since the run, its A/B loop is device-setup.sh's run_bench_ab: the same commands, the grid's
# four calls now before the head_dim rows' instead of interleaved.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s39-descriptors
GRID=(--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1)
DIMS=(-d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT" "${GRID[@]}"
run_bench_ab "$OUT/dims" "${DIMS[@]}"
F='*PrefixAttentionKernelTest*wgmma_Flat*:*PrefixAttentionKernelTest*wgmma_Peaky*:*PrefixAttentionKernelTest*wgmma_Poison*'
F+=':*PrefixAttentionKernelTest*wgmma_ManyItems*:*PrefixAttentionKernelTest*wgmma_wg1*:*CudaCascadeTest*:*FusedCascade*'
F+=':*EveryGroupSize*'
timeout 240 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter="$F" >"$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
run_sanitizers '*PrefixAttentionKernelTest*wgmma_PoisonGroups_page7_d256_fp16*:*PrefixAttentionKernelTest*wgmma_Flat_bf16_d64_g4*:*PrefixAttentionKernelTest*wgmma_ManyItems_d128_fp16*'
pack_logs
