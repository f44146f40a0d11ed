#!/usr/bin/env bash
# Session 73, run 3 (nvidia-h200): the one-launch fused kernel (suffix on the prefix CTA's spare
# warps; PREFIXD_FUSED=1, off by default since session 10) where its design should pay best and no
# session has timed it since its suffix warps got the swap-AB softmax (s55): compute-bound prefixes
# (32/32 B256 P8192 / P32768) with short GQA-1 suffixes (S32: 134 MB of decode K/V that the default
# runs after the prefix, 33-36 us of the step). Variants default, fused (⊕ inside), fused-mk (the
# merge kernel after it), interleaved per shape, fp16 and bf16, twice (order swapped).
#   CARRY=.carry/s73c bash bench/kernel/sessions/s73-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s73-run3
args=(--heads 32/32 -b 256 -p 8192,32768 -s 32 --dtype fp16,bf16)
RUN_TIMEOUT=200 run_variants fused1 "default,fused,fused-mk" "${args[@]}"
RUN_TIMEOUT=200 run_variants fused2 "fused-mk,fused,default" "${args[@]}"
show_parts fused1 fused2
pack_logs
