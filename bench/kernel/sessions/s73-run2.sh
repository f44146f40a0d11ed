#!/usr/bin/env bash
# Session 73, run 2 (nvidia-h200): the decode warm-up (the prefix kernel's producers pull the decode's
# start into L2 while the CTA computes its last tiles; DecodeL2Warmup) for decodes of several waves,
# which session 12 left out (4 MiB then: no gain). Run 1's timelines show the short compute-bound
# prefixes (32/8 B256 P1024: tiles 2.9-9.5 us of a 12 us kernel) leaving DRAM idle while the decode
# after them is a chain of cold round trips (32/8 B256 S32: 25.8 us for 33.5 MB). Variants: the
# default (one-wave rule, 4 MiB) against PREFIXD_DECODE_WARMUP_WAVES=64 with 16 and 64 MiB of K/V,
# interleaved per shape, fp16, twice (order swapped); then the warm-up's oracle test.
# The setting was removed after this run (no gain): apply bench/kernel/results/s73/warmup-waves.patch
# and build to run it again.
#   CARRY=.carry/s73b bash bench/kernel/sessions/s73-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s73-run2
W=PREFIXD_DECODE_WARMUP_WAVES=64+PREFIXD_DECODE_WARMUP_MIB
args=(--heads 32/8,32/32 -b 64,256 -p 1024,8192 -s 32,256 --dtype fp16)
RUN_TIMEOUT=150 run_variants warm1 "default,${W}=16,${W}=64" "${args[@]}"
RUN_TIMEOUT=150 run_variants warm2 "${W}=64,${W}=16,default" "${args[@]}"
show_parts warm1 warm2
run_gpu_tests '*DecodeWarmup*'
pack_logs
