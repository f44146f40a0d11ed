#!/usr/bin/env bash
# Session 42, run 1 (nvidia-h200): a share of head_dim 64's softmax exponentials on the FMA pipe
# (FmaExp2, FlashAttention-4's software exp2: round, degree-4 polynomial, exponent bits) instead of
# the MUFU, whose 16 exponentials per SM per clock are as long as the tile's tensor work at
# head_dim 64 (WgmmaPrefixConfig::FMA_EXP2_EVERY: every Nth score of the 64 per thread and tile).
# Binaries ($CARRY/bins.tar.xz): new = every 4th (16 of 64), prefixd_prefix_probe_e8 (8 of 64),
# _e3 (21 of 64), *_old = HEAD (b22fab3, none). Built with PREFIXD_SM90A_FMA_EXP2_EVERY_D64=N.
#   1. the prefix probe, old e8 new e3, twice: head_dim 64 fp16 / bf16 (32/8 and 32/32 B256
#      P32768, 32/8 B256 P8192), after a head_dim-128 warm-up shape (unchanged: the control);
#   2. the kernel benchmark, old new old new: the issue's head_dim 64 rows;
#   3. GPU tests: every head_dim 64 case on new, the prefix-attention head_dim 64 cases on e8.
#   CARRY=.carry/s42a bash bench/kernel/sessions/s42-fma-exp2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s42-fma-exp2
SHAPES=(--shape 32/8:256:32768 --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64
  --shape 32/8:256:32768:64:bf16 --shape 32/32:256:32768:64:bf16)
run_probe_rounds "old e8 new e3" --kernel wgmma --iters 20 "${SHAPES[@]}"
DIMS=(-d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT/dims" "${DIMS[@]}"
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
cp "$OUT/tests.log" "$OUT/tests-new.log"
timeout 100 /tmp/b/prefixd_gpu_tests_e8 --gtest_brief=1 --gtest_filter='*PrefixAttention*d64*' >"$OUT/tests-e8.log" 2>&1
echo "tests e8 rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests-e8.log" | tr '\n' ' ')"
grep -hE '^\[  FAILED' "$OUT/tests-e8.log" | head -10
pack_logs
