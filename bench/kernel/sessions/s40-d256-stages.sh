#!/usr/bin/env bash
# Session 40, run 3 (nvidia-h200): at head_dim 256, the turn's ring stages through WarpUniform
# (K's and V's descriptors in uniform registers) without the warpgroup / shared-memory hints, which
# lengthen its turn (sass_config.sh: 407 -> 447 lines with the stages alone, a different softmax
# interleave). Binaries ($CARRY/bins.tar.xz): this build and run 2's kept build as *_old.
#   1. the kernel benchmark, old new old new: the issue's head_dim 256 rows (32/32 and 32/8,
#      B256 P32768, S 32 and 256, fp16 and bf16);
#   2. GPU tests: every head_dim 256 case (199: the wgmma oracle cases, cascades, fused cascades),
#      memcheck and racecheck on one. Run 3 gave them 150 s and they need ~175: cut off with no
#      result; run 4 is PART=tests with 280 s.
#   CARRY=.carry/s40c [PART=tests] bash bench/kernel/sessions/s40-d256-stages.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s40-d256-stages
[ "${PART:-}" = tests ] || run_bench_ab "$OUT" -d 256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
GPU_TESTS_TIMEOUT=280 run_gpu_tests '*d256*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
[ "${PART:-}" = tests ] && run_sanitizers '*PrefixAttentionKernelTest*wgmma_PoisonGroups_page7_d256_bf16*'
pack_logs
