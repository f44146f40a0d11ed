#!/usr/bin/env bash
# Session 54, run 6 (nvidia-h200): where the CUDA-graph replay's intermittent excess at head_dim
# 256 goes (runs 4-5: +8.5 µs in 2 of 10 processes at 32/8, up to +5.8 at 32/32): the D256 rows
# (32/8 and 32/32 B256 P32768 S256 fp16) in six processes under the CUPTI trace
# (bench/trace/cupti_trace.cc: every kernel's start and end), each process's stream-launched step
# and graph replay times printed; the traces are analysed offline (timeline.py and by hand).
#   CARRY=.carry/s54e bash bench/kernel/sessions/s54-graph-trace.sh   (bins.tar.xz with the trace library)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-graph-trace
for i in 1 2 3 4 5 6; do
  d="$OUT/p$i"; mkdir -p "$d"
  LD_LIBRARY_PATH=/tmp/b CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR="$d" \
    timeout 100 $B -d 256 --heads 32/8,32/32 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline -c 0 \
    --csv "$d/bench.csv" >"$d/out.txt" 2>&1
  echo "p$i rc=$? $(awk -F, 'NR>1 {printf "%s/%s total %.1f graph %.1f (%+.1f)  ", $3, $4, $16, $17, $17-$16}' "$d/bench.csv")"
done
pack_logs
