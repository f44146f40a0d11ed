#!/usr/bin/env bash
# Session 78, run 3 (nvidia-h200): the shallow 2-warp decode CTA's register cap with the register
# epilogue. Run 2 had GQA 8 faster without it (ptxas's 181 registers, no spill, 5 CTAs per SM)
# than held at 168 (6 per SM, 72 bytes of spill): −1.4 to −2.4 µs at 64/8 B64-128, even at B256.
# Builds, in turn, twice: old (HEAD fcbc31a), b (the cap at GQA ≤ 4 only: 168 registers with 32
# bytes of spill at head_dim 128, 128 at 64) and nocap (no cap at all: ~180 and ~161), on 32/8 and
# 64/8, head_dim 64 and 128, B64 / B256, P1024, S16 / S32, and 32/8 P8192 S32, fp16.
#   CARRY=.carry/s78c bash bench/kernel/sessions/s78-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s78-run3
Q="--no-baseline --no-graph -c 1 --copy-gib 1 --gemm-n 2048 --settle-ms 200"
mkdir -p /tmp/old /tmp/nocap
ln -sf /tmp/b/prefixd_kernel_bench_old /tmp/old/prefixd_kernel_bench
ln -sf /tmp/b/prefixd_kernel_bench_nocap /tmp/nocap/prefixd_kernel_bench
run_build_rounds cap "old b nocap" -d 64,128 --heads 32/8,64/8 -b 64,256 -p 1024 -s 16,32 --dtype fp16 $Q
run_build_rounds cap8k "old b nocap" -d 128 --heads 32/8 -b 64,256 -p 8192 -s 32 --dtype fp16,bf16 $Q
pack_logs
