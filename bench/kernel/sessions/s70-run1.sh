#!/usr/bin/env bash
# Session 70, run 1 (nvidia-h200): the one-warp CTA's tests after its forced depth became the length
# rule's 4 rounds (and the tests' shared helper); then existing settings on the GQA-4 decode's tail
# after the prefix (32/8 S32 and S256 rows, where the step is the prefix part plus 4-19 µs): the
# prefix kernel's L2 warm-up budget of the decode's start, the tensor-core decode's warps per CTA,
# and the CUDA-core decode.
#   CARRY=.carry/s70a bash bench/kernel/sessions/s70-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run1
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*DecodeWarp*:*DecodePipelineTest*warp*'
RUN_TIMEOUT=150 run_variants warmup \
  "default,PREFIXD_DECODE_WARMUP_MIB=0,PREFIXD_DECODE_WARMUP_MIB=16,PREFIXD_DECODE_WARMUP_MIB=64,PREFIXD_DECODE_WARMUP=0" \
  --heads 32/8 -b 16,64,256 -p 1024,8192 -s 32 --dtype fp16
RUN_TIMEOUT=150 run_variants warps \
  "default,PREFIXD_DECODE_WARPS=1,PREFIXD_DECODE_WARPS=2,PREFIXD_DECODE_WARPS=4,PREFIXD_DECODE_KERNEL=simt" \
  --heads 32/8 -b 64,256 -p 8192 -s 32,256 --dtype fp16
SHOW_LINES=40 show_variants warmup warps
pack_logs
