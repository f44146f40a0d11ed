#!/usr/bin/env bash
# Session 39, run 4 (nvidia-h200): the softmax beside the P·V at head_dim 256 only
# (WgmmaPrefixConfig::SOFTMAX_BESIDE_PV; runs 2-3 in s39-pv-wait.sh measured it slower at 64 and
# 128, 7% faster at 256). Binaries as in s39-pv-wait.sh ($CARRY/bins.tar.xz, old = HEAD before).
#   1. the issue's head_dim-256 rows (B256 P32768, 32/32 and 32/8, S 32/256, fp16 and bf16) and 12
#      more head_dim-256 shapes (B16-256, P8192/32768), old new old new; an A/B table;
#   2. every head_dim-256 GPU test (kernel oracle cases, cascades), then compute-sanitizer memcheck
#      and racecheck on three wgmma head_dim-256 kernel cases.
#   CARRY=.carry/s39a bash bench/kernel/sessions/s39-d256.sh
# (Since the run, its A/B loop is device-setup.sh's run_bench_ab: the same commands, the issue's
# rows' four calls now before the other shapes' instead of interleaved.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s39-d256
ROWS=(-d 256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
MORE=(-d 256 --heads 32/32,32/8 -b 16,64,256 -p 8192,32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT" "${ROWS[@]}"
run_bench_ab "$OUT/more" "${MORE[@]}"
timeout 300 /tmp/b/prefixd_gpu_tests --gtest_brief=1 --gtest_filter='*d256*' >"$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
run_sanitizers '*PrefixAttentionKernelTest*wgmma_PoisonGroups_page7_d256_fp16*:*PrefixAttentionKernelTest*wgmma_ManyItems_d256_bf16*:*PrefixAttentionKernelTest*wgmma_Flat_fp16_d256_g4*'
pack_logs
