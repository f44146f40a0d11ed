#!/usr/bin/env bash
# Session 75, run 3 (nvidia-h200): this session's two kernel changes against HEAD's binaries
# ($CARRY_OLD): the merge of long runs of few rows one block per row (MergeLongRunsKernel) and the
# 2-head CUDA-core decode at head_dim 256 bounded for 4 CTAs per SM (115 registers, no spill; 6 per SM
# spilled at 80). The latter was timed on 16/2 shapes, which are groups of 8, not 2: both builds ran
# the same decode there (run 7 found the mix-up); it was reverted unmeasured.
#   1. the GPU tests of the merge, the decodes, head_dim 256 and the cascade (8 shards), memcheck and
#      racecheck on the merge tests;
#   2. the parts timed alone (`--calibrate`: every part of the cascade, plain decode and the narrow
#      and half cascades) by each build in turn, twice: plain decode's long merges (one and three
#      requests over 12344-65536 tokens) and the 16/2 (g = 8) decode at head_dim 256 (B3-256, S300-1024).
#   CARRY=.carry/s75b CARRY_OLD=.carry/s75a bash bench/kernel/sessions/s75-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run3
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
run_test_shards '*Merge*:*CudaCoresDecodeTest*:*DecodePipelineTest*:*CudaDecodeVariantTest*:*d256*:*CudaCascadeTest*:*CudaPlanner*'
run_sanitizers '*CudaMergeStates*'
run_part_rounds merge-fp16 ' prefix ' --dtype fp16 --heads 32/8 -b 1 -p 65536 -s 1,1000
run_part_rounds merge-bf16 ' prefix ' --dtype bf16 --heads 16/2 -d 64,256 -b 3 -p 12344 -s 7 --page-size 8
run_part_rounds gqa2-d256 ' prefix ' --dtype bf16 --heads 16/2 -d 256 -b 3,100,256 -p 1000 -s 300,1024 --page-size 8
pack_logs
