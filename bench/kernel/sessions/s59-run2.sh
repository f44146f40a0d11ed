#!/usr/bin/env bash
# Session 59, run 2 (nvidia-h200): (1) the merge's run bounds by arithmetic (PREFIXD_MERGE_RUN_LOOKUP,
# run 1: the bounds' chain of loads was the merge kernel's top stall): its GPU tests, then an A/B
# against the loaded bounds in one process on the shapes whose steps run the merge kernel (the
# planner's concurrent mode at 32/8 B256 P8192 / P32768 S256; every request merged with --no-fuse);
# (2) why the prefix part of 32/32 B256 P32768 is ~7% slower than 32/8's at the same FLOPs (s58 run
# 3: 224.4 / 218.7 µs fp16 / bf16 against 209.7 / 204.4; the step 32/32 B256 P32768 S32 1.6-4% over
# its bar): 32/32 streams 4x the K/V bytes (537 MB, ~2.4 TB/s beside the MMAs). Its K/V tile, ring
# depth and L2 policy at both head pairs, then the default under each L2 flush mode.
#   CARRY=.carry/s59b bash bench/kernel/sessions/s59-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-run2
run_gpu_tests 'CudaMergeStates*:CudaMergeStateInPlace*:CudaPrefixAttention*:CudaConcurrent*:CudaGraph.*:CudaFusedMerge*:CudaFusedCascade.MergeKernel*'
RUN_TIMEOUT=250 run_variants merge "default,PREFIXD_MERGE_RUN_LOOKUP=table,default,PREFIXD_MERGE_RUN_LOOKUP=table" \
  -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16,bf16
run_variants merge-nofuse "default,PREFIXD_MERGE_RUN_LOOKUP=table,default,PREFIXD_MERGE_RUN_LOOKUP=table" \
  -d 128 --heads 32/32,32/8 -b 256 -p 8192 -s 256 --dtype fp16 --no-fuse
show_parts merge merge-nofuse | sort -k1,1 -k2,2 -k5,5 -k6,6
SHOW_LINES=12 show_variants merge merge-nofuse | cut -c1-300
RUN_TIMEOUT=250 run_variants kv "default,PREFIXD_SM90A_KV_TILE=128,stages3+PREFIXD_SM90A_KV_TILE=128,kvfirst,kvlast,PREFIXD_SM90A_KV_POLICY=normal,default" \
  -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32 --dtype fp16,bf16
for f in clean none; do
  run_variants flush-$f default -d 128 --heads 32/32,32/8 -b 256 -p 32768 -s 32 --dtype fp16,bf16 --flush $f
done
show_parts kv flush-clean flush-none | sort -k1,1 -k2,2 | head -60
SHOW_LINES=16 show_variants kv | cut -c1-400
pack_logs
