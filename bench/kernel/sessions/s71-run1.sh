#!/usr/bin/env bash
# Session 71, run 1 (nvidia-h200): each prefix CTA's first copies in the launch
# (PREFIXD_SM90A_FIRST_COPIES, PrefixFirstCopies in kernels/cuda/sm90a/prefix_attention_sm90a.cuh).
#  1. the sm_90a prefix kernel's oracle tests (the new _firstmem cases, and every default case, now
#     with the first copies), the cascade, graph, concurrent and early-decode tests: 8 gtest shards
#     side by side;
#  2. the prefix probe's timeline with and without the first copies (when the first K tile lands);
#  3. the same binary with and without them, interleaved per shape (fp16 and bf16, the memory-bound
#     P1024 / P8192 rows, where a CTA's start is a larger share of the step);
#  4. this build against the build before (session 70's final kernel benchmark) in separate
#     processes, old new old new: the s33 build lost more than its items saved this way.
#   CARRY=.carry/s71a bash bench/kernel/sessions/s71-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run1
F='*SequentialTmaDecode*:*PrefixAttentionKernelTest*wgmma*:PrefixAttentionQueryMap.*:Shapes/CudaCascadeTest.*:*CudaGraph*:*CudaConcurrentCascade*:*CudaEarlyDecode*'
run_test_shards "$F"
for v in 1 0; do
  PREFIXD_SM90A_FIRST_COPIES=$v timeout 90 /tmp/b/prefixd_prefix_probe --kernel wgmma --timeline \
    --shape 32/32:16:8192 --shape 32/32:64:8192 --shape 32/8:64:8192 --shape 32/8:256:32768 >"$OUT/probe-first$v.txt" 2>&1
  echo "== probe first copies $v rc=$?"; grep -E '^#? *timeline|first K|^ *wgmma' "$OUT/probe-first$v.txt" | cut -c1-180 | head -16
done
V="default,PREFIXD_SM90A_FIRST_COPIES=0"
RUN_TIMEOUT=150 run_variants same16 "$V" --heads 32/32,32/8 -b 16,64 -p 1024,8192 -s 32,256 --dtype fp16,bf16
SHOW_LINES=40 show_variants same16
run_bench_ab "$OUT/ab" --heads 32/32,32/8 -b 16,64 -p 1024,8192 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
pack_logs
