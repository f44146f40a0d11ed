#!/usr/bin/env bash
# Session 6, device timelines (nvidia-h200-x4, one call): where the distributed step's time goes.
# Each run below executes under the CUPTI injection library (bench/trace/cupti_trace.cc), then
# timeline.py prints the per-step table of every rank's trace. Binaries, libprefixd_cupti_trace.so
# and libcupti.so.13: $BIN (carried). Output: $OUT/trace.log, $OUT/traces.tgz (the raw CSVs).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/trace-s6}
WORK=${WORK:-/tmp/trace-s6-work}
mkdir -p "$OUT" "$WORK"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
S="--mode strong --prefix 262144 --batch 128 --suffix 512 --layers 1 -n 20"
E="--mode strong --prefix 65536 --batch 128 --suffix 512 --layers 32 --gpus 4 -n 5"
traced() {  # name, np, program and arguments
  local name=$1 np=$2; shift 2
  mkdir -p "$WORK/$name"
  echo "== $name (np $np): $*" | tee -a "$OUT/trace.log"
  timeout 150 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" -x NCCL_NVLS_ENABLE=0 \
    -x LD_LIBRARY_PATH -x CUDA_INJECTION64_PATH="$BIN/libprefixd_cupti_trace.so" -x PREFIXD_TRACE_DIR="$WORK/$name" \
    "$@" >"$WORK/$name/out.txt" 2>&1
  echo "   rc $?" | tee -a "$OUT/trace.log"
  grep -E "^(strong|weak) |^# check|cupti|^ *[0-9]+ +[0-9]+ +[0-9]+ " "$WORK/$name/out.txt" | tee -a "$OUT/trace.log"
  python3 bench/trace/timeline.py "$WORK/$name"/trace.*.csv --top ${TOP:-2} --marker ${MARKER:-FillSyntheticKv} >>"$OUT/trace.log" 2>&1
  tar czf "$OUT/traces.tgz" -C "$WORK" .
}
traced strong1 1 "$BIN/prefixd_scaling_bench" $S --gpus 1
traced strong4 4 "$BIN/prefixd_scaling_bench" $S --gpus 4
traced exposed4 4 "$BIN/prefixd_scaling_bench" $E
# The foundation's missed shape, kernels alone (spin-held stream, flush before each iteration).
TOP=3 MARKER=HoldKernel traced kernel 1 "$BIN/prefixd_kernel_bench" --heads 32/8 -b 64 -p 8192 -s 256 --dtype fp16 --no-baseline
