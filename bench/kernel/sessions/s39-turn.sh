#!/usr/bin/env bash
# Session 39, run 5 (nvidia-h200): a shorter turn in the FA3 schedule. The issue block between
# TurnBegin and TurnEnd, which the other consumer warpgroup waits for, loses (a) O's rescale,
# moved after the softmax at head_dim 64 and 128 (WgmmaPrefixConfig::RESCALE_IN_TURN, as
# FlashAttention-3 places it), and (b) the per-wgmma descriptor arithmetic (DescriptorPlus).
# SASS lines of the main loop's turn at head_dim 128: 389 → 328 (a) → 286 (a + b).
# Binaries ($CARRY/bins.tar.xz): this build (a + b), prefixd_prefix_probe_a (a only), and the
# *_old binaries of HEAD.
#   1. the prefix probe, old a new, twice, compute- and memory-bound shapes;
#   2. the kernel benchmark, old new old new: the issue's 36 fp16 grid shapes and its head_dim
#      64/256 rows; A/B tables;
#   3. (TESTS=1) the wgmma kernel's oracle cases, cascades, and compute-sanitizer on three cases.
#   CARRY=.carry/s39a [TESTS=1] bash bench/kernel/sessions/s39-turn.sh
# (Since the run, its loops are device-setup.sh's run_probe_rounds and run_bench_ab: the same
# commands, the grid's four calls now before the head_dim rows' instead of interleaved.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s39-turn
SHAPES=(--shape 32/8:256:32768 --shape 32/32:256:32768 --shape 32/8:256:8192 --shape 32/8:64:32768
  --shape 32/8:256:32768:64 --shape 32/32:256:32768:64 --shape 32/8:256:8192:64 --shape 32/8:256:32768:128:bf16
  --shape 32/32:16:8192)
run_probe_rounds "old a new" --kernel wgmma --iters 20 "${SHAPES[@]}"
GRID=(--heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16 --no-baseline --no-graph -c 1)
DIMS=(-d 64,256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1)
run_bench_ab "$OUT" "${GRID[@]}"
run_bench_ab "$OUT/dims" "${DIMS[@]}"
if [ "${TESTS:-0}" = 1 ]; then
  GPU_TESTS_TIMEOUT=330 run_gpu_tests '*PrefixAttentionKernelTest*wgmma*:*CudaCascade*:*EveryGroupSize*:*QueryMap*'
  grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
fi
pack_logs
