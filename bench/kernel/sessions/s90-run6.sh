#!/usr/bin/env bash
# Session 90, run 6 (any card): the chained concurrent step (PREFIXD_CONCURRENT_CHAIN=1: prefix
# grid capped at SMs − k, signalling its dependents at its start; the TMA decode its programmatic
# dependent on the k SMs left, finishing its requests after one wait; no join, no merge kernel for
# one-chunk suffixes). First its GPU test and the concurrent / cascade GPU tests (8 shards), then
# the A/B: the planner's plan against k forced with the TMA decode, two streams and chained, at
# decode-dominated steps and the headline row (fp16), each step the measured choice's plan.
# Last, the default path of this build against 4f7505e's (run_bench_ab: the TMA decode's registers
# moved by 2-7 with the deferred finish; no spills either way).
# Carry .carry/s90b (ignored, local): this tree's prefixd_kernel_bench, prefixd_gpu_tests, prefixd,
# and .carry/s90a's prefixd_kernel_bench as prefixd_kernel_bench_old:
#   mkdir -p .carry/s90b && tar -cf - --transform 's,.*/,./,' -C build bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd -C /tmp prefixd_kernel_bench_old | xz -6 -T2 > .carry/s90b/bins.tar.xz
#   CARRY=.carry/s90b bash bench/kernel/sessions/s90-run6.sh
# Run 7 is this script on .carry/s90c (the same files of the next build, whose LoadPlan refuses the
# concurrent plans for the chain: on s90b one-chunk suffixes were still left to the merge kernel).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s90-run6
run_test_shards 'CudaConcurrent*:CudaCascade*:CudaEarlyDecode*'
V=default
for k in 36 64 96 112; do
  F=PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force
  V=$V,$F,$F+PREFIXD_CONCURRENT_CHAIN=1
done
run_variants chain-a "$V" --measured-choice --heads 32/8 -b 16,64,256 -p 1024 -s 256 --dtype fp16
run_variants chain-b "$V" --measured-choice --heads 32/32 -b 16,64 -p 1024 -s 256 --dtype fp16
run_variants chain-c "$V" --measured-choice --heads 32/8 -b 64,256 -p 8192 -s 256 --dtype fp16
H=default
for k in 14 16 20; do
  F=PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force
  H=$H,$F,$F+PREFIXD_CONCURRENT_CHAIN=1
done
run_variants chain-head "$H" --measured-choice --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
SHOW_LINES=9 show_variants chain-a chain-b chain-c chain-head
run_bench_ab "$OUT/ab" --measured-choice --no-baseline -c 1 --heads 32/8 -b 64,256 -p 1024,32768 -s 256 --dtype fp16
pack_logs
