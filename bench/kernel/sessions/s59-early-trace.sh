#!/usr/bin/env bash
# Session 59, run 4 (nvidia-h200): whether the early decode's grid runs beside the prefix grid (run 3:
# every share slower). The CUPTI timeline (bench/trace/cupti_trace.cc) of 32/32 B256 P32768 S32 fp16
# steps at 0%, 15% and 100%: each kernel's start and length from the L2 flush; then the early
# decode's GPU tests with run 3's test expectation fixed (early items only where the prefix grid
# leaves SMs idle).
#   CARRY=.carry/s59d bash bench/kernel/sessions/s59-early-trace.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-early-trace
export LD_LIBRARY_PATH=/tmp/b${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for pct in 0 15 100; do
  d=$OUT/trace$pct; mkdir -p "$d"
  PREFIXD_EARLY_DECODE_PERCENT=$pct CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR=$d \
    timeout 120 $B -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16 --no-baseline --no-graph -c 1 -n 20 -w 3 \
    >"$d/out.txt" 2>&1
  echo "== $pct%: rc $? $(grep 'wrong results' "$d/out.txt")"
  python3 bench/trace/timeline.py "$d"/trace.*.csv --flush-mib 200 --top 4 2>&1 | tail -45
done
run_gpu_tests 'CudaEarlyDecode.*:CudaGraph.EarlyDecode*'
pack_logs
