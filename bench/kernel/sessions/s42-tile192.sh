#!/usr/bin/env bash
# Session 42, run 8 (nvidia-h200): 192-token K/V tiles at head_dim 64 (WgmmaPrefixConfig::BLOCK_N;
# session 27 measured −5% with a build whose GPU tests faulted, together with 176-token tiles at
# head_dim 128, whose 22 KiB panels are not 1024-byte aligned for the 128-byte swizzle). Every
# head_dim-64 configuration (wide, deep ring, narrow, plain) takes the 192-token tile and box.
# Binaries ($CARRY/bins.tar.xz): new = 192-token tiles at head_dim 64; *_old = HEAD.
#   1. the prefix probe, kernels wgmma and wgmma-s3, old new, twice, head_dim 64;
#   2. GPU tests of new: every head_dim 64 case, then the deep-ring ones;
#   3. the kernel benchmark, old new old new, the issue's head_dim-64 rows;
#   4. compute-sanitizer on four head_dim-64 cases.
#   CARRY=.carry/s42f bash bench/kernel/sessions/s42-tile192.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-tile192
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:64:32768:64 --shape 32/32:16:8192:64 --shape 32/8:256:32768:64:bf16)
run_probe_rounds "old new" --kernel wgmma,wgmma-s3 --iters 20 "${SHAPES[@]}"
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10; cp "$OUT/tests.log" "$OUT/tests-d64.log"
GPU_TESTS_TIMEOUT=60 run_gpu_tests '*s3*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10; cp "$OUT/tests.log" "$OUT/tests-s3.log"
DIMS=(-d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT/dims" "${DIMS[@]}"
run_sanitizers '*wgmma_Flat_fp16_d64_g4:*wgmma_overlap_s3_ManyItems_d64_bf16:*wgmma_ManyItems_d64_fp16:*wgmma_PoisonShortPrefix_d64_fp16:*wgmma_PoisonGroups_page7_d64_bf16'
pack_logs
