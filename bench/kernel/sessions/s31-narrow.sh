#!/usr/bin/env bash
# Session 31's device calls (nvidia-h200), one per PART: the narrow CUDA-core decode CTA (64
# threads, 16 CTAs per SM at GQA 1; DecodePipeline::kNarrow, PREFIXD_DECODE_PIPELINE=narrow) and
# its rules. Binaries carried as $CARRY/bins.tar.xz; logs in $OUT, also packed as $OUT/all.tgz.
#   PART=1 (run 1, CARRY=.carry/s31a, the narrow CTA only when forced): the decode GPU tests (the
#          narrow CTA among the pipelines), memcheck and racecheck on them, then the narrow CTA
#          forced against the default (the 128-thread shallow CTA, 8 per SM, for items of <= 32
#          tokens), interleaved per shape: the issue's GQA 1 grid at S = 32 (fp16 and bf16), GQA 1
#          shapes it was not fitted on (S 8-64), and S = 128/256 (items of several rounds).
#   PART=2 (run 2, the rule takes it where short GQA 1 items need more than one wave): CARRY=.carry/s31b
#          the issue's grid and head_dim rows (default only: bench/kernel/sessions/s17-grid.sh without the
#          planner check), and the rule against the shallow CTA forced at head_dim 64 / 256, GQA 1.
#   PART=3 (run 3, CARRY=.carry/s31c): the narrow CTA forced at GQA 2 (an experiment: the
#          CUDA-core kernel's deep pipeline runs there by default) and 1-warp tensor-core decode
#          CTAs (PREFIXD_DECODE_WARPS=1) at GQA 4 and 8, each against the default, on short items.
#   PART=4 (run 4, CARRY=.carry/s31d: the GQA 2 rule, narrow for items of <= 64 tokens): the whole
#          GPU suite and compute-sanitizer (launch/gpu-check.sh, sharded), then the rule against the
#          deep CTA forced at GQA 2, head_dim 64 / 128 / 256, S 8-128 (the rule's edge).
#   PART=5 (run 5, CARRY=.carry/s31e: the GQA 2 rule bounded to 8 narrow steps, i.e. 32 tokens at
#          head_dim 256): the decode pipeline tests, the rule against deep at head_dim 256, the
#          issue's grid and head_dim rows, the planner check (fp16, bf16) and the README's main job
#          (launch/run-local.sh, one rank).
#   PART=6 (run 6, CARRY=.carry/s31f: the GQA 2 rule off at head_dim 256; new pipeline cases at
#          head_dim 256 and GQA 2): the decode and cascade GPU tests, memcheck and racecheck on the
#          pipeline cases (the rule and the narrow CTA forced).
#   PART=7 (run 7, CARRY=.carry/s31g: GQA 1 items of 33-64 tokens in more than one wave of the
#          deep CTAs take the narrow one): the rule against the deep CTA forced, on shapes no rule
#          was fitted on (heads 8/8, 32/32, 48/48; B 48-640; S 40 and 64; head_dim 64, 128; bf16).
#   PART=8 (run 8, CARRY=.carry/s31h, the session's last binaries): the whole GPU suite and
#          compute-sanitizer (launch/gpu-check.sh, sharded), then PART=5's grid, head_dim rows,
#          planner check and main job.
#   PART=9 (run 9, CARRY=.carry/s31i: the review mend 889ab23, behaviour unchanged): the decode and
#          cascade GPU tests, memcheck and racecheck on the pipeline cases, and the rule against each CTA forced
#          where it must pick narrow (GQA 1 S32 B256, GQA 2 S8) and where it must not (GQA 1 S32
#          B16: shallow; GQA 2 head_dim 256: deep), so equal times name the CTA it picked.
#   PART=10 (run 10, CARRY=.carry/s31j: a decode CTA with no finishing item no longer waits for the
#          prefix grid, only the grid's last CTA does; PREFIXD_FUSE_MERGE=0|1; measured slower and
#          reverted, patch in bench/kernel/results/s31/unfused-beside.patch): the decode, cascade
#          and graph GPU tests, memcheck and racecheck on the pipeline cases under the rule (split
#          suffixes: items that do not finish their request), then the unfused merge
#          (PREFIXD_FUSE_MERGE=0) against the default on the issue's fp16 grid: with no CTA
#          blocked until the prefix ends, the decode beside the narrow prefix CTA can finish there.
#   PART=11 (run 11, CARRY=.carry/s31k: the narrow prefix CTA honours PREFIXD_SM90A_STAGES=3, a
#          3-stage K/V ring in 209 KiB; measured slower and reverted, patch in
#          bench/kernel/results/s31/narrow-prefix-3stages.patch): 3 stages against the default 2 on the shapes whose prefix
#          items have <= 64 rows (the narrow CTA) and whose prefix is memory-bound.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s31-narrow

# The whole GPU suite and compute-sanitizer as launch/gpu-check.sh runs them (sharded), on the
# carried binaries; its summary.
gpu_check() {
  PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 OUT=$OUT/check bash launch/gpu-check.sh \
    >"$OUT/check.log" 2>&1
  echo "gpu-check rc=$?"; tail -8 "$OUT/check.log"
}
# The issue's grid and head_dim rows, the planner check (fp16, bf16) and the README's main job.
grid_planner_main_job() {
  OUT=$OUT/grid VARIANTS=default PLANNER_ENVS=- bash bench/kernel/sessions/s17-grid.sh
  PREFIXD_BIN=/tmp/b/prefixd timeout 200 bash launch/run-local.sh >"$OUT/main-job.log" 2>&1
  echo "main job rc=$?"; tail -4 "$OUT/main-job.log"
}
PIPELINE_TESTS="*DecodePipeline*:*NextWave*:*CudaCoresDecode*:*CudaCascade*"
PIPELINE_SANITIZED="*DecodePipelineTest*narrow*:*DecodePipelineTest*auto*"

case "${PART:-1}" in
1)
  run_gpu_tests "${FILTER:-$PIPELINE_TESTS}"
  [ "${SANITIZE:-1}" = 1 ] && run_sanitizers "*DecodePipelineTest*narrow*:*NextWave*"
  V=${V:-default,PREFIXD_DECODE_PIPELINE=narrow}
  run_variants grid-s32 "$V" --heads 32/32 -b 16,64,256 -p 1024,8192,32768 -s 32 --dtype fp16,bf16
  run_variants unseen "$V" --heads 32/32,16/16,64/64 -b 24,96,384 -p 2048,16384 -s 8,24,64 --dtype bf16
  run_variants s256 "$V" --heads 32/32 -b 64,256 -p 8192 -s 128,256 --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/grid-s32.csv" "$OUT/unseen.csv" "$OUT/s256.csv"
  SHOW_LINES=${SHOW_LINES:-50} show_variants grid-s32
  ;;
2)
  OUT=$OUT/grid VARIANTS=default SKIP_PLANNER=1 bash bench/kernel/sessions/s17-grid.sh
  run_variants dims-s32 default,PREFIXD_DECODE_PIPELINE=shallow --heads 32/32 -b 64,256 -p 8192 -s 8,32 \
    --head-dim 64,256 --dtype fp16
  show_variants dims-s32
  ;;
3)
  run_gpu_tests "*DecodePipeline*:*NextWave*:*CudaCoresDecode*"
  run_variants gqa2 default,PREFIXD_DECODE_PIPELINE=narrow --heads 32/16,16/8 -b 64,256,512 -p 2048 -s 8,32,64 \
    --dtype bf16
  run_variants warps1 default,PREFIXD_DECODE_WARPS=1 --heads 32/8,64/8,32/4 -b 64,256,512 -p 2048 -s 8,32 --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/gqa2.csv" "$OUT/warps1.csv"
  ;;
4)
  gpu_check
  run_variants gqa2rule default,PREFIXD_DECODE_PIPELINE=deep --heads 32/16 -b 64,512 -p 2048 -s 8,64,128 \
    --head-dim 64,128,256 --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/gqa2rule.csv"
  ;;
5)
  run_gpu_tests "*DecodePipeline*:*NextWave*:*CudaCoresDecode*"
  run_variants gqa2d256 default,PREFIXD_DECODE_PIPELINE=deep --heads 32/16 -b 64,512 -p 2048 -s 8,32 --head-dim 256 \
    --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/gqa2d256.csv"
  grid_planner_main_job
  ;;
6)
  run_gpu_tests "$PIPELINE_TESTS"
  run_sanitizers "$PIPELINE_SANITIZED"
  ;;
7)
  run_gpu_tests "*DecodePipeline*:*NextWave*"
  run_variants gqa1s64 default,PREFIXD_DECODE_PIPELINE=deep --heads 8/8,32/32,48/48 -b 48,160,640 -p 4096 -s 40,64 \
    --head-dim 64,128 --dtype bf16
  python3 bench/kernel/variant_diff.py "$OUT/gqa1s64.csv"
  ;;
8)
  gpu_check
  grid_planner_main_job
  ;;
9)
  run_gpu_tests "$PIPELINE_TESTS"
  run_sanitizers "$PIPELINE_SANITIZED"
  V=default,PREFIXD_DECODE_PIPELINE=narrow,PREFIXD_DECODE_PIPELINE=shallow,PREFIXD_DECODE_PIPELINE=deep
  run_variants pick1 "$V" --heads 32/32 -b 16,256 -p 2048 -s 32 --dtype fp16
  run_variants pick2 "$V" --heads 32/16 -b 256 -p 2048 -s 8 --head-dim 128,256 --dtype fp16
  SHOW_LINES=8 show_variants pick1 pick2
  ;;
10)
  run_gpu_tests "$PIPELINE_TESTS:*Graph*:*Merge*"
  run_sanitizers "*DecodePipelineTest*auto*"
  run_variants unfused default,PREFIXD_FUSE_MERGE=0 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 \
    --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/unfused.csv"
  ;;
11)
  V=default,PREFIXD_SM90A_STAGES=3
  run_variants narrow3 "$V" --heads 32/32 -b 16,64 -p 8192,32768 -s 32,256 --dtype fp16,bf16
  run_variants narrow3b "$V" --heads 32/8,16/16,64/16 -b 16,48 -p 4096,16384,32768 -s 32,256 --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/narrow3.csv" "$OUT/narrow3b.csv"
  ;;
*) echo "unknown PART=$PART (1-11)" >&2; exit 2 ;;
esac
pack_logs
