#!/usr/bin/env bash
# Session 69, run 2 (nvidia-h200): the one-warp decode CTA at each ring depth
# (PREFIXD_DECODE_WARP_ROUNDS: a 32-token item in 1, 2 or 4 rounds; 12, 20 or 32 CTAs per SM) against
# the rule's CTA (the narrow 64-thread CTA, 16 per SM, two rounds) on the GQA-1 S32 grid shapes and
# on unseen short-item shapes, after the new depth test and both sanitizers on it. Run 1 had the
# whole item in one round only (12 per SM): 1.7-7.1 µs slower suffix parts.
#   CARRY=.carry/s69b bash bench/kernel/sessions/s69-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run2
run_gpu_tests '*DecodeWarpRounds*:*DecodePipelineTest*warp*'
GPU_TESTS_TIMEOUT=150 run_sanitizers '*DecodeWarpRounds*'
W=PREFIXD_DECODE_PIPELINE=warp+PREFIXD_DECODE_WARP_ROUNDS
RUN_TIMEOUT=220 run_variants grid "default,$W=1,$W=2,$W=4" --heads 32/32 -b 16,64,256 -p 1024,8192,32768 -s 32 --dtype fp16
RUN_TIMEOUT=220 run_variants unseen "default,$W=2,$W=4" --heads 16/16,64/64,32/16 -b 48,128,384 -p 2048 -s 8,24 --dtype bf16 -d 128
RUN_TIMEOUT=120 run_variants d64 "default,$W=2,$W=4" --heads 32/32,32/16 -b 64,256 -p 8192 -s 16,32 --dtype fp16 -d 64
SHOW_LINES=45 show_variants grid unseen d64
pack_logs
