#!/usr/bin/env bash
# Session 92, run 2: the concurrent step chained on one stream (PREFIXD_CONCURRENT_CHAIN=1: the
# prefix grid signals at its start, the TMA decode is its programmatic dependent, the merge the
# decode's) against the two-stream default, each step the model's plan: (1) the concurrent rows of
# the grid (32/8 B256 P8192 / P32768 S256, fp16 and bf16), also with k = 15 and 17 forced (chained);
# (2) its GPU tests and the concurrent and graph ones (8 shards); (3) the A/B again in the other
# order at 32/8 B128 / B256 P8192 / P32768 S256 / S512 (fp16);
# (4) the chained headline step under the CUPTI trace (the merge's start after the prefix grid's end).
#   mkdir -p .carry/s92b && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     bench/libprefixd_cupti_trace.so tests/prefixd_gpu_tests launch/prefixd \
#     -C /usr/local/cuda/lib libcupti.so.13 | xz -6 -T4 > .carry/s92b/bins.tar.xz
#   CARRY=.carry/s92b bash bench/kernel/sessions/s92-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s92-run2
C=PREFIXD_CONCURRENT_CHAIN=1
K="PREFIXD_CONCURRENT_DECODE_TMA=force+PREFIXD_CONCURRENT_DECODE_SMS"
RUN_TIMEOUT=120 run_variants ab1 "default,$C,$C+$K=15,$C+$K=17" --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16
SHOW_LINES=40 show_variants ab1
run_test_shards '*Chained*:CudaConcurrent*:CudaGraph*'
RUN_TIMEOUT=100 run_variants ab2 "$C,default" --heads 32/8 -b 128,256 -p 8192,32768 -s 256,512 --dtype fp16
SHOW_LINES=40 show_variants ab2
RUN_TIMEOUT=100 run_headline_trace PREFIXD_CONCURRENT_CHAIN=1
pack_logs
