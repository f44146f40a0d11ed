#!/usr/bin/env bash
# Session 43, run 11 (nvidia-h200): the last commit's GPU tests of head_dim 64's tiles (the forced
# 128-token cases and the head_dim-64 cascades), with PREFIXD_SM90A_KV_TILE=192 set for a D128 case
# too, through a cascade (whose backend reads it; ignored there now). Binaries ($CARRY/bins.tar.xz): prefixd_gpu_tests of that commit.
#   CARRY=.carry/s43f bash bench/kernel/s43-last.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s43-last
GPU_TESTS_TIMEOUT=70 run_gpu_tests '*_t128*:*CudaCascadeTest*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -5
PREFIXD_SM90A_KV_TILE=192 timeout 15 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter='*CudaCascadeTest*mixed_groups_bf16_h4kv2_d128_p16' 2>&1 | grep -E '^\[  (PASSED|FAILED)'
