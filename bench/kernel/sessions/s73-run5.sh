#!/usr/bin/env bash
# Session 73, run 5 (nvidia-h200): can the early grid stream faster per SM at GQA 1 S32? Run 4 found
# the automatic share (~30%) at its best and a cliff from 40%, where the early TMA decode (12 warps
# × 2 stages, ~55 GB/s per SM on the 4 idle SMs) outlasts the prefix. With 2 stages a warp has one
# tile in flight while it computes (its copies run one tile ahead, across items); with 8 warps × 3
# stages (PREFIXD_DECODE_TMA_WARPS=8, measured slower in s52 at S256 GQA 4) it has two.
# (Corrected after the run: this header first said a warp's finish could not overlap the next
# item's copies; the kernel's issue side already overlaps them.)
# Variants at 32/32 B256 P32768 S32, fp16 and bf16, interleaved, twice (order swapped).
#   CARRY=.carry/s73c bash bench/kernel/sessions/s73-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s73-run5
E=PREFIXD_EARLY_DECODE_PERCENT W=PREFIXD_DECODE_TMA_WARPS=8
args=(--heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16)
RUN_TIMEOUT=200 run_variants w1 "default,$W,$E=35,$W+$E=35,$W+$E=40,$W+$E=45" "${args[@]}"
RUN_TIMEOUT=200 run_variants w2 "$W+$E=45,$W+$E=40,$W+$E=35,$E=35,$W,default" "${args[@]}"
show_parts w1 w2
pack_logs
