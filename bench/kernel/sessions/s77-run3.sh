#!/usr/bin/env bash
# Session 77, run 3 (nvidia-h200): the tensor-core decode's single-step pipeline
# (PREFIXD_DECODE_PIPELINE=single: the 2-warp CTA's items of one 32-token step on one K/V stage, its
# registers capped for 8 CTAs per SM instead of 6), which run 2's Nsight Compute profile of the GQA-4
# S32 decode (12 warps per SM waiting on their copies, 42% of the DRAM bandwidth) suggested.
#   1. the decode pipelines' oracle tests (single among them), memcheck and racecheck on single's;
#   2. A/B in one process (--variants default,single), twice: the 32/8 S32 rows of the grid (fp16 and
#      bf16), 32/8 S8 / S16 at B256, and GQA 8 (64/8) S32 at B64 / B256.
#   CARRY=.carry/s77b bash bench/kernel/sessions/s77-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run3
run_gpu_tests '*DecodePipelineTest*'
run_sanitizers '*DecodePipelineTest*single*'
V=default,PREFIXD_DECODE_PIPELINE=single
for round in 1 2; do
  RUN_TIMEOUT=150 run_variants s32-$round $V -d 128 --heads 32/8 -b 16,64,256 -p 1024,8192,32768 -s 32 --dtype fp16,bf16
  RUN_TIMEOUT=100 run_variants short-$round $V -d 128 --heads 32/8 -b 256 -p 1024,8192 -s 8,16 --dtype fp16
  RUN_TIMEOUT=100 run_variants g8-$round $V -d 128 --heads 64/8 -b 64,256 -p 1024,8192 -s 32 --dtype fp16
done
SHOW_LINES=80 show_variants s32-1 s32-2 short-1 short-2 g8-1 g8-2
pack_logs
