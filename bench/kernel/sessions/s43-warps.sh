#!/usr/bin/env bash
# Session 43, run 6 (nvidia-h200): warps per CTA of the tensor-core decode on short suffixes
# (S = 32, GQA 4: 2048 items of 32 tokens at B256, which the default 2-warp kernel runs in ~4 waves
# of 4 CTAs per SM). Variants default (DecodeMmaWarps' rule), w1, w4, on the S32 steps at 32/8
# where the decode is exposed after the prefix. Binaries ($CARRY/bins.tar.xz): run 4's.
#   CARRY=.carry/s43c bash bench/kernel/sessions/s43-warps.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s43-warps
V=default,w1,w4
run_variants d64 "$V" -d 64 --heads 32/8 -b 256 -p 32768 -s 32 --dtype fp16,bf16
run_variants d128 "$V" --heads 32/8 -b 16,64,256 -p 8192,32768 -s 32 --dtype fp16
show_variants d64 d128
pack_logs
