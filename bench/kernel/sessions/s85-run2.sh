#!/usr/bin/env bash
# Session 85, run 2 (nvidia-h200): the speculative softmax (prefix_attention_sm90a.cuh,
# SPECULATIVE_SOFTMAX at head_dim 64 and 128) against the build before it (HEAD 5e5cbbe).
#  1. The prefix kernels' GPU tests (every PrefixAttention case, among them the new RisingMax
#     scenarios that force the max's rescale and the overflowed tile's recompute) and the cascade,
#     fused and concurrent ones, in 8 shards; then memcheck and racecheck on the RisingMax cases.
#  2. A/B of the two kernel benchmarks in turn, twice (run_bench_ab): the head_dim-64 rows (the
#     prefix-part bar item, >= 60% of the GEMM rate) and the compute-bound head_dim-128 rows.
# Carry: this tree's kernel bench and GPU tests, and HEAD's kernel bench as prefixd_kernel_bench_old:
#   mkdir -p .carry/s85b && cp /tmp/kb_old build/prefixd_kernel_bench_old && tar -C build -cJf \
#     .carry/s85b/bins.tar.xz --transform 's,.*/,./,' bench/prefixd_kernel_bench tests/prefixd_gpu_tests \
#     prefixd_kernel_bench_old
#   CARRY=.carry/s85b bash bench/kernel/sessions/s85-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s85-run2

run_test_shards '*PrefixAttention*:*RisingMax*:*Cascade*:*Fused*:*Concurrent*'
run_sanitizers '*RisingMax*'

common=(--no-baseline --no-graph -c 1)
run_bench_ab "$OUT/ab-d64" --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64 --dtype fp16,bf16 "${common[@]}"
run_bench_ab "$OUT/ab-d128" --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16,bf16 "${common[@]}"
pack_logs
