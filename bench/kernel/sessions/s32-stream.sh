#!/usr/bin/env bash
# Session 32's device calls (nvidia-h200), one per PART: the streaming CUDA-core decode kernel
# (persistent CTAs whose K/V copies stay in flight across their items; DecodePipeline::kStream,
# PREFIXD_DECODE_PIPELINE=stream, GQA 1 and 2; kernels/cuda/decode_attention_stream.cuh). It was
# measured slower and reverted: PARTs 1-2 need binaries built with
# bench/kernel/results/s32/stream-decode.patch applied. Binaries carried as $CARRY/bins.tar.xz;
# logs in $OUT, also packed as $OUT/all.tgz. Run 1 was called with SANITIZE=0.
#   PART=1 (run 1, CARRY=.carry/s32a, the streaming kernel only when forced): the decode GPU tests
#          (the streaming kernel among the pipelines, and many items per CTA), memcheck and
#          racecheck on them, then the streaming kernel forced against the default, interleaved
#          per shape: the issue's GQA 1 grid at S = 32 and 256 (fp16), and GQA 1 and 2 shapes no
#          rule was fitted on (bf16; S 8-128).
#   PART=2 (run 2, same binaries): the streaming kernel against the default with and without the
#          fused merge (--no-fuse), 32/32 B64-512 P1024 S8-256, to see what the items' epilogues cost.
#   PART=3 (run 3, CARRY=.carry/s32b: HEAD's binaries, kernels as session 31's): half the prefix
#          item target against the default where the narrow prefix CTA runs beside the tensor-core
#          decode (32/8 B8-16, 64/8 B8), the planner check's one shape over 5% (32/8 B16 P8192).
#   PART=4 (run 4, CARRY=.carry/s32c: the review mend, PREFIXD_DECODE_PIPELINE's names in one
#          table): the pipeline tests and a bad value's error.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s32-stream

STREAM_TESTS="*DecodeStream*:*DecodePipeline*:*NextWave*:*CudaCoresDecode*"

case "${PART:-1}" in
1)
  run_gpu_tests "${FILTER:-$STREAM_TESTS}"
  [ "${SANITIZE:-1}" = 1 ] && run_sanitizers "*DecodeStream*:*DecodePipelineTest*h8kv8*stream*:*DecodePipelineTest*h16kv8*stream*"
  V=${V:-default,PREFIXD_DECODE_PIPELINE=stream}
  run_variants grid "$V" --heads 32/32 -b 16,64,256 -p 1024,8192 -s 32,256 --dtype fp16
  run_variants unseen "$V" --heads 32/32,16/16,32/16 -b 48,192,512 -p 2048 -s 8,32,64,128 --dtype bf16
  python3 bench/kernel/variant_diff.py "$OUT/grid.csv" "$OUT/unseen.csv"
  SHOW_LINES=${SHOW_LINES:-40} show_variants grid
  ;;
2)
  # Where the streaming kernel's time goes: without the fused merge (--no-fuse: every item writes
  # its state, the merge kernel after) an item's epilogue has no dependent loads of prefix states.
  V=${V:-default,PREFIXD_DECODE_PIPELINE=stream}
  run_variants nofuse "$V" --heads 32/32 -b 64,256,512 -p 1024 -s 8,32,256 --dtype fp16 --no-fuse
  run_variants fused "$V" --heads 32/32 -b 64,256,512 -p 1024 -s 8,32,256 --dtype fp16
  python3 bench/kernel/variant_diff.py "$OUT/nofuse.csv" "$OUT/fused.csv"
  ;;
3)
  # Where fewer, longer prefix items pay (data for the cost model): the narrow prefix CTA (<= 64
  # rows per KV head) beside the tensor-core decode (GQA 4 and 8), the default item target (132:
  # 128 items here) against 66 (PREFIXD_PREFIX_TARGET_ITEMS), P 2048-32768, S 32-512.
  V=${V:-default,PREFIXD_PREFIX_TARGET_ITEMS=66}
  run_variants half4 "$V" --heads 32/8 -b 8,16 -p 2048,4096,8192,16384,32768 -s 32,256,512 --dtype fp16
  run_variants half8 "$V" --heads 64/8 -b 8 -p 4096,8192,16384 -s 32,256 --dtype bf16
  python3 bench/kernel/variant_diff.py "$OUT/half4.csv" "$OUT/half8.csv"
  ;;
4)
  # The review mend (PREFIXD_DECODE_PIPELINE's names in one table): the pipeline tests, which check
  # that the backend describes each forced pipeline by its name, and a bad value's error.
  run_gpu_tests "*DecodePipeline*:*NextWave*"
  PREFIXD_DECODE_PIPELINE=bogus timeout 60 $B --heads 32/32 -b 16 -p 1024 -s 32 -n 3 -w 1 --no-baseline --no-graph \
    -c 0 >"$OUT/bad-pipeline.txt" 2>&1
  echo "bad value rc=$?: $(grep -m1 PREFIXD_DECODE_PIPELINE "$OUT/bad-pipeline.txt")"
  ;;
*)
  echo "unknown PART=${PART}"; exit 2 ;;
esac
pack_logs
