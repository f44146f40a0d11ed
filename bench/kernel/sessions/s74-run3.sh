#!/usr/bin/env bash
# Session 74, run 3 (nvidia-h200; binaries built with bench/kernel/results/s74/warmup-late-items.patch,
# reverted after the run): the late decode's start pulled into L2 at the end of a long
# compute-bound prefix. At 32/32 B256 P32768 S32 (the nearest miss: bf16 245.9 µs against 245.7 in
# run 2) the prefix (~213 µs) leaves DRAM ~40% idle and the early decode takes ~30% of the suffix on
# the 4 idle SMs; the late decode's 94 MB follow the prefix (+33 µs). Session 73's several-wave
# warm-up (its patch, re-applied here for measurement, now warming only the late items) had been
# measured at P1024-8192 only. Default against PREFIXD_DECODE_WARMUP_WAVES=64 with 16 / 32 / 48 MiB,
# fp16 and bf16, two rounds (order swapped); 32/32 B16 P32768 S32 too (a one-wave decode whose
# early items the default warm-up now skips). Then the warm-up's oracle test.
#   CARRY=.carry/s74b bash bench/kernel/sessions/s74-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s74-run3
W=PREFIXD_DECODE_WARMUP_WAVES M=PREFIXD_DECODE_WARMUP_MIB
v1="default,$W=64+$M=16,$W=64+$M=32,$W=64+$M=48"
v2="$W=64+$M=48,$W=64+$M=32,$W=64+$M=16,default"
args=(--heads 32/32 -b 16,256 -p 32768 -s 32 --dtype fp16,bf16)
RUN_TIMEOUT=250 run_variants warm1 "$v1" "${args[@]}"
RUN_TIMEOUT=250 run_variants warm2 "$v2" "${args[@]}"
show_parts warm1 warm2
run_gpu_tests '*DecodeWarmup*:*EarlyDecode*'
pack_logs
