#!/usr/bin/env bash
# Session 94, run 1, on the binaries of the commit that adds PREFIXD_MERGE_PREFETCH and
# PREFIXD_SM90A_STATE_POLICY (both off by default; with them off every prefix kernel of head_dim 64
# and 128 has HEAD's ptxas -v, the merge kernels 1-3 registers fewer, no spills).
# (1) The A/B of the two hints on the chained concurrent step's merge (its 7-8 µs after the grids:
# states from DRAM behind the K/V streamed since): default, the merge's prefetch before its wait,
# the prefix states evict-last, both; 32/8 B256 P8192 / P32768 S256 and B128 P32768 S256, fp16
# and bf16, the model's plans, one process per dtype. (2) The GPU tests of the chained step, the
# merge and the new test, memcheck on the new test (no racecheck: no shared memory changed). (3) On an H200 the grid and head_dim rows with
# the defaults (run_bar_grid: the bar's figures with the chained step, never timed on an H200).
#   mkdir -p .carry/s94a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T8 > .carry/s94a/bins.tar.xz
#   CARRY=.carry/s94a bash bench/kernel/sessions/s94-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s94-run1
V="default,PREFIXD_MERGE_PREFETCH=1,PREFIXD_SM90A_STATE_POLICY=last,PREFIXD_MERGE_PREFETCH=1+PREFIXD_SM90A_STATE_POLICY=last"
for dt in fp16 bf16; do
  RUN_TIMEOUT=120 run_variants hints-$dt "$V" --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype $dt
done
SHOW_LINES=40 show_variants hints-fp16 hints-bf16
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaConcurrentCascade.*:CudaMergeStates*:CudaFusedMerge*'
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='CudaConcurrentCascade.TheChainedStepsStateHintsKeepItsBits' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
run_bar_grid
pack_logs
