#!/usr/bin/env bash
# Session 75, run 4 (nvidia-h200): 2-head groups' decode at head_dim 256 on the tensor-core kernel's
# 4-row group (PairOnTensorCores) against run 3's build ($CARRY_OLD: the long-run merge only), then the
# planner checks on this build. As run 3, its decode shapes are 16/2, groups of 8 that the change does
# not touch: both builds ran the same kernels there (run 7); the change was reverted unmeasured, and the
# planner checks below are of the long-run merge's kernels.
#   1. the GPU tests of the decodes, head_dim 256, the cascade and the planner (8 shards); memcheck on
#      the GQA-2 head_dim-256 cascade and decode tests;
#   2. the parts timed alone (`--calibrate`) by each build in turn, twice: 16/2 D256 B3-256 P1000
#      S300-1024 and 16/2 D256 B100 P12344 S7/S300, bf16, page 8;
#   3. run 1's off-grid planner checks (81 fp16 + 32 bf16 shapes) and the default grid's (fp16,
#      bf16; 60 shapes each) on this build.
#   CARRY=.carry/s75c CARRY_OLD=.carry/s75b bash bench/kernel/sessions/s75-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run4
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
run_test_shards '*CudaCoresDecodeTest*:*DecodePipelineTest*:*CudaDecodeVariantTest*:*d256*:*CudaCascadeTest*:*CudaPlanner*:*Merge*'
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='*h8kv4_d256*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
run_part_rounds gqa2-d256 ' prefix \| merge ' --dtype bf16 --heads 16/2 -d 256 -b 3,100,256 -p 1000 -s 300,1024 --page-size 8
run_part_rounds gqa2-d256-long ' prefix \| merge ' --dtype bf16 --heads 16/2 -d 256 -b 100 -p 12344 -s 7,300 --page-size 8
run_offgrid_planner_checks
pack_logs
