#!/usr/bin/env bash
# Session 88, run 5: head_dim 128's 160-token K/V tile only for items averaging at least
# kLongTileItemTokens (8192) in every mode, not only the concurrent one (run 4, an H100: since the
# speculative softmax the longer tile's prefix parts are 2.7-3.6% slower on items of 4096 tokens,
# 1.2% faster on items of 16384). A/B of whole steps as the planner plans them, this tree's rule
# (new) against the rule before (old = HEAD 7ba1d8f's kernel benchmark), in turn, twice
# (run_bench_ab): fp16, 32/32 and 32/8, B64-256, P8192-32768, S32 and S256; then bf16 at the
# shapes whose tile changed. Every row is checked against the CPU (-c 1).
# Carry .carry/s88c (ignored, local): prefixd_kernel_bench (this tree) and prefixd_kernel_bench_old
# (7ba1d8f's, .carry/s87's).
#   CARRY=.carry/s88c bash bench/kernel/sessions/s88-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s88-run5
run_bench_ab "$OUT/fp16" --heads 32/32,32/8 -b 64,128,256 -p 8192,16384,32768 -s 32,256 --dtype fp16 \
  --no-baseline --no-graph -c 1
run_bench_ab "$OUT/bf16" --heads 32/32,32/8 -b 64,128,256 -p 8192,16384 -s 256 --dtype bf16 --no-baseline --no-graph -c 1
echo "== the tile each plan took (new build, round 1): shape, plan"
for t in fp16 bf16; do
  grep -E '^ +(fp16|bf16) ' "$OUT/$t/new1.txt" | sed -E 's/^ +([a-z0-9]+) +[0-9]+ +([0-9/]+) +([0-9]+) +([0-9]+) +([0-9]+) +([0-9]+) .*prefix-plan\(tile ([0-9]+), items of ([0-9]+) tokens.*/\1 \2 B\4 P\5 S\6 tile \7 items \8/' \
    | grep tile | sort | uniq | head -40
done
pack_logs
