#!/usr/bin/env bash
# Session 40, run 1 (nvidia-h200): the warpgroup index in a uniform register at head_dim 128
# (WgmmaPrefixConfig::UNIFORM_WARPGROUP; session 39's uniform-warpgroup.patch, limited to 128), and
# the GPU tests session 39's descriptor change did not get. Binaries ($CARRY/bins.tar.xz): this
# build and the *_old binaries of HEAD (f02fa02).
#   1. the kernel benchmark, old new old new: the issue's 36 fp16 grid shapes (head_dim 128);
#   2. the bf16 half of the grid on this build, once (20 of 72 needs it re-measured);
#   3. GPU tests: the 464 wgmma oracle cases session 39 left out (plain, s3, ctas, wg2, qcp, small
#      tile, groups, query rows...) on this build, whose head_dim 64/256 code is HEAD's.
#   CARRY=.carry/s40a bash bench/kernel/sessions/s40-uniform-wg.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s40-uniform-wg
GRID=(--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT" "${GRID[@]}" --dtype fp16
timeout 120 $B "${GRID[@]}" --dtype bf16 --csv "$OUT/bf16.csv" >"$OUT/bf16.txt" 2>&1
echo "bf16 grid rc=$? $(grep 'wrong results' "$OUT/bf16.txt")"
GPU_TESTS_TIMEOUT=330 run_gpu_tests '*PrefixAttentionKernelTest*wgmma*-*wgmma_Flat*:*wgmma_Peaky*:*wgmma_Poison*:*wgmma_ManyItems*:*wgmma_wg1*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
pack_logs
