#!/usr/bin/env bash
# (Session 65: the CTA pairs were removed after run 2 measured them no faster; to re-run, apply
# bench/kernel/results/s64/cta-pairs.patch to commit 8ca71eb.)
# Session 64, run 1 (nvidia-h200): CTA pairs (PREFIXD_SM90A_CTA_PAIRS=1, prefix_cta_pairs.h): the
# wide head_dim-128 prefix CTAs as clusters of two that multicast each K/V tile into both rings,
# where the plan's CTA pairs share their tiles (two or more row tiles per KV head: 32/32 B256,
# 32/8 B64-256). First the GPU tests of the paths it touches and both sanitizers on the new test;
# then the default against the pairs, interleaved per shape in one process, twice (two processes).
#   CARRY=.carry/s64a bash bench/kernel/sessions/s64-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s64-run1
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*CtaPairs*:CudaCascade.*:Shapes/CudaCascadeTest.*:Shapes/PrefixAttentionTest.*:Shapes/CudaPrefixAttentionTest.*'
run_sanitizers '*CtaPairs*'
P=PREFIXD_SM90A_CTA_PAIRS=1
for i in 1 2; do
  RUN_TIMEOUT=150 run_variants pairs$i "default,$P" -d 128 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16,bf16
done
show_parts pairs1 | cut -c1-200
echo "== rows that ran CTA pairs (pairs1)"; grep "cta-pairs" "$OUT/pairs1.txt" | awk '{print $1, $3, "D" $4, "B" $5, "P" $6, "S" $7, $NF}'
SHOW_LINES=60 show_variants pairs1 pairs2 | grep -v "^#$" | cut -c1-200
pack_logs
