#!/usr/bin/env bash
# Session 69, run 1 (nvidia-h200): the one-warp decode CTA (PREFIXD_DECODE_PIPELINE=warp: a whole
# item of ≤ 32 tokens in flight per warp, 12 CTAs per SM) against the rule's CTA (the narrow 64-thread
# CTA at GQA 1 on more than one wave) on the GQA-1 S32 grid shapes and on unseen short-item shapes
# (GQA 1 and 2, S8-32), after the decode GPU tests with the new pipeline and both sanitizers on it.
#   CARRY=.carry/s69a bash bench/kernel/sessions/s69-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run1
run_gpu_tests '*DecodePipeline*:*DecodeNextWave*'
GPU_TESTS_TIMEOUT=150 run_sanitizers '*DecodePipelineTest*warp*'
W=PREFIXD_DECODE_PIPELINE=warp
N=PREFIXD_DECODE_PIPELINE=narrow
RUN_TIMEOUT=200 run_variants grid "default,$W,$N" --heads 32/32 -b 16,64,256 -p 1024,8192,32768 -s 32 --dtype fp16
RUN_TIMEOUT=200 run_variants unseen "default,$W" --heads 16/16,64/64,32/16 -b 48,128,384 -p 2048 -s 8,24 --dtype bf16
show_parts grid unseen
SHOW_LINES=40 show_variants grid unseen
pack_logs
