#!/usr/bin/env bash
# Session 20, one device call (nvidia-h200): the decode kernels' shallow pipeline for short items
# (DecodePipeline, PREFIXD_DECODE_PIPELINE). The pipeline GPU tests (and the cascade ones around
# them), then prefixd_kernel_bench with the variants default (the length rule) and
# PREFIXD_DECODE_PIPELINE=deep (the pipeline before) interleaved per shape: the issue's fp16 grid at
# S = 32, shapes it was not fitted on (S 8-32, other heads and batches), and forced shallow against
# deep at S = 256 (where the rule keeps deep). Binaries carried as $CARRY/bins.tar.xz.
#   run 1 (GQA 2 had the shallow pipeline too then): CARRY=.carry/s20a
#   run 2, the next-wave prefetch against none (PREFIXD_DECODE_NEXT_WAVE): CARRY=.carry/s20b
#     V=default,PREFIXD_DECODE_NEXT_WAVE=0 V256=default,PREFIXD_DECODE_NEXT_WAVE=0
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s20-pipeline
run_gpu_tests "${FILTER:-*DecodePipeline*:*NextWave*:*CudaCascade*:*CudaCoresDecode*:*Graph*}"
V=${V:-default,PREFIXD_DECODE_PIPELINE=deep}
run() {  # name, bench arguments...
  local name=$1; shift
  timeout 150 $B "$@" --no-baseline --no-graph -c 1 --variants "${VARIANTS:-$V}" --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(grep 'wrong results' "$OUT/$name.txt")"
}
run grid-s32 --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32 --dtype fp16
run unseen --heads 32/32,32/16,16/2,64/8 -b 32,128,512 -p 2048,16384 -s 8,24 --dtype bf16
VARIANTS=${V256:-default,PREFIXD_DECODE_PIPELINE=shallow} run s256 --heads 32/32,32/8 -b 64,256 -p 8192 -s 256 --dtype fp16
python3 bench/kernel/variant_diff.py "$OUT/grid-s32.csv" "$OUT/unseen.csv" "$OUT/s256.csv"
