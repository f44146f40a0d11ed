#!/usr/bin/env bash
# Session 93, run 2: the chained step that finishes its requests in its two kernels
# (PREFIXD_CONCURRENT_FINISH=1: the last prefix warpgroup or decode warp to write a request's states
# for a KV head ⊕-merges its run; no merge kernel) against the chained step with the merge kernel
# (the default), each step the model's plan: (1) the grid's concurrent rows (32/8 B256 P8192 /
# P32768 S256, fp16 and bf16); (2) its GPU tests and the chained, concurrent and graph ones (8
# shards); (3) compute-sanitizer memcheck on the finishing tests; (4) the A/B in the other order at
# 32/8 B128 / B256 P8192 / P32768 S256 / S512 (fp16); (5) the finishing headline step under the
# CUPTI trace (the decode grid's end against the prefix grid's).
#   mkdir -p .carry/s93b && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     bench/libprefixd_cupti_trace.so tests/prefixd_gpu_tests launch/prefixd \
#     -C /usr/local/cuda/lib libcupti.so.13 | xz -6 -T8 > .carry/s93b/bins.tar.xz
#   CARRY=.carry/s93b bash bench/kernel/sessions/s93-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s93-run2
F=PREFIXD_CONCURRENT_FINISH=1
RUN_TIMEOUT=120 run_variants ab1 "default,$F" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16
SHOW_LINES=30 show_variants ab1
SHARD_TIMEOUT=150 run_test_shards '*Finish*:*Chained*:CudaConcurrent*:CudaGraph*'
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
  --gtest_filter='*TheFinishingStep*:*FinishingConcurrent*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^\[  PASSED' "$OUT/memcheck.log" | tr '\n' ' ')"
RUN_TIMEOUT=100 run_variants ab2 "$F,default" --heads 32/8 -b 128,256 -p 8192,32768 -s 256,512 --dtype fp16
SHOW_LINES=30 show_variants ab2
RUN_TIMEOUT=60 run_headline_trace PREFIXD_CONCURRENT_FINISH=1
pack_logs
