#!/usr/bin/env bash
# Session 31, one device call (nvidia-h200): the narrow CUDA-core decode CTA (64 threads, 16 CTAs
# per SM at GQA 1; DecodePipeline::kNarrow, PREFIXD_DECODE_PIPELINE=narrow) against the default
# (the length rule: the 128-thread shallow CTA, 8 per SM, for items of <= 32 tokens). The decode
# GPU tests (the narrow CTA among the pipelines), memcheck and racecheck on them, then
# prefixd_kernel_bench with the two variants interleaved per shape: the issue's GQA 1 grid at
# S = 32 (fp16 and bf16), GQA 1 shapes it was not fitted on (S 8-64), and S = 256 (items of
# several rounds). Binaries carried as $CARRY/bins.tar.xz.
#   PART=1 (run 1, the narrow CTA only when forced): CARRY=.carry/s31a
#   PART=2 (run 2, the rule takes it where short GQA 1 items need more than one wave): CARRY=.carry/s31b
#          the issue's grid and head_dim rows (default only: bench/kernel/s17-grid.sh without the
#          planner check), and the rule against the shallow CTA forced at head_dim 64 / 256, GQA 1.
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s31-narrow
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
# Every log as one tarball ($OUT/all.tgz): the device hands back a limited number of files.
pack_logs() { tar -C "$OUT" -czf /tmp/s31-all.tgz --exclude=all.tgz . && mv /tmp/s31-all.tgz "$OUT/all.tgz"; }
if [ "${PART:-1}" = 2 ]; then
  OUT=$OUT/grid VARIANTS=default SKIP_PLANNER=1 bash bench/kernel/s17-grid.sh
  run_variants dims-s32 default,PREFIXD_DECODE_PIPELINE=shallow --heads 32/32 -b 64,256 -p 8192 -s 8,32 \
    --head-dim 64,256 --dtype fp16
  show_variants dims-s32
  pack_logs
  exit 0
fi
run_gpu_tests "${FILTER:-*DecodePipeline*:*NextWave*:*CudaCoresDecode*:*CudaCascade*}"
[ "${SANITIZE:-1}" = 1 ] && run_sanitizers "*DecodePipelineTest*narrow*:*NextWave*"
V=${V:-default,PREFIXD_DECODE_PIPELINE=narrow}
run_variants grid-s32 "$V" --heads 32/32 -b 16,64,256 -p 1024,8192,32768 -s 32 --dtype fp16,bf16
run_variants unseen "$V" --heads 32/32,16/16,64/64 -b 24,96,384 -p 2048,16384 -s 8,24,64 --dtype bf16
run_variants s256 "$V" --heads 32/32 -b 64,256 -p 8192 -s 128,256 --dtype fp16
python3 bench/kernel/variant_diff.py "$OUT/grid-s32.csv" "$OUT/unseen.csv" "$OUT/s256.csv"
SHOW_LINES=${SHOW_LINES:-50} show_variants grid-s32
pack_logs
