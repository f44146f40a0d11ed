#!/usr/bin/env bash
# Session 59, run 5 (nvidia-h200): the early decode with its grid capped as meant (run 4's trace:
# the cap had counted the whole device's resident CTAs per SM, so the early grid was one CTA per
# item, 64 of them beside the prefix and the rest queued behind it). The early decode's GPU tests,
# then the step against the default at 15-50% in one process, and the 15% step's CUPTI timeline.
#   CARRY=.carry/s59e bash bench/kernel/sessions/s59-early2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-early2
run_gpu_tests 'CudaEarlyDecode.*:CudaGraph.EarlyDecode*'
V="default,PREFIXD_EARLY_DECODE_PERCENT=15,PREFIXD_EARLY_DECODE_PERCENT=30,PREFIXD_EARLY_DECODE_PERCENT=50,default"
RUN_TIMEOUT=150 run_variants big "$V" -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16,bf16
RUN_TIMEOUT=150 run_variants small "$V" -d 128 --heads 32/32 -b 16,64 -p 8192 -s 32,256 --dtype fp16
SHOW_LINES=12 show_variants big small | cut -c1-280
export LD_LIBRARY_PATH=/tmp/b${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
d=$OUT/trace15; mkdir -p "$d"
PREFIXD_EARLY_DECODE_PERCENT=15 CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR=$d \
  timeout 120 $B -d 128 --heads 32/32 -b 256 -p 32768 -s 32 --dtype fp16 --no-baseline --no-graph -c 1 -n 20 -w 3 >"$d/out.txt" 2>&1
python3 bench/trace/timeline.py "$d"/trace.*.csv --flush-mib 200 --top 4 2>&1 | tail -8
pack_logs
