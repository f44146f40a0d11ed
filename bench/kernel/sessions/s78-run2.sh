#!/usr/bin/env bash
# Session 78, run 2 (nvidia-h200), on run 1's binaries (the register epilogue): whether the
# tensor-core decode's 1-warp CTA (a whole 32-token item on one warp: no cross-warp ⊕, the item's
# setup once; `w1`) now beats the 2-warp shallow CTA on short items — session 70 had it +0.4 to +8.1
# µs slower with the old epilogue. One process per round, twice: default,w1,w4 on 32/8 and 64/8
# B64 / B256, P1024 / P8192, S 16 / 32 / 64, fp16 (and bf16 at S32). Then the GQA-8 shallow CTA
# with and without run 1's register cap (6 CTAs per SM with 72 bytes of spill, or ptxas's 181
# registers, 5 per SM; build g8), against the build before, builds in turn, twice.
#   CARRY=.carry/s78a bash bench/kernel/sessions/s78-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s78-run2
Q="--copy-gib 1 --gemm-n 2048 --settle-ms 200"
for round in 1 2; do
  RUN_TIMEOUT=150 run_variants w-$round default,w1,w4 -d 128 --heads 32/8,64/8 -b 64,256 -p 1024,8192 -s 16,32,64 \
    --dtype fp16 $Q
  RUN_TIMEOUT=60 run_variants wbf-$round default,w1 -d 128 --heads 32/8 -b 64,256 -p 1024,8192 -s 32 --dtype bf16 $Q
done
mkdir -p /tmp/old /tmp/g8
ln -sf /tmp/b/prefixd_kernel_bench_old /tmp/old/prefixd_kernel_bench
ln -sf /tmp/b/prefixd_kernel_bench_g8 /tmp/g8/prefixd_kernel_bench
run_build_rounds g8 "old b g8" -d 128 --heads 64/8 -b 64,128,256 -p 1024,8192 -s 16,32 --dtype fp16 --no-baseline \
  --no-graph -c 1 $Q
SHOW_LINES=40 show_variants w-1 w-2 wbf-1 wbf-2 | head -150
pack_logs
