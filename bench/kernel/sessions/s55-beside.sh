#!/usr/bin/env bash
# Session 55, run 6 (nvidia-h200): why the concurrent step's prefix runs slower beside the decode
# than alone. The planner's concurrent shapes (32/8 D128 B256 P8192 / P32768 and B128 P32768, S256,
# fp16 and bf16), two processes each, with --beside none,spin,fma,dram,l2: the prefix part alone
# on its capped grid, then again with each synthetic load on the k SMs left to the decode
# (bench/kernel/beside_load.h), all timed interleaved with the step. Then one process of the
# headline shape under the CUPTI trace (each kernel's start and end: the prefix kernel alone,
# beside each load and in the step).
#   CARRY=.carry/s55c bash bench/kernel/sessions/s55-beside.sh   (bins.tar.xz with the trace library)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-beside
for i in 1 2; do
  timeout 150 $B -d 128 --heads 32/8 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 \
    --beside none,spin,fma,dram,l2 --csv "$OUT/beside$i.csv" >"$OUT/beside$i.txt" 2>&1
  echo "process $i rc=$? $(grep 'wrong results' "$OUT/beside$i.txt")"
  awk -F, 'NR>1 {printf "%s %s/%s B%s P%s S%s prefix %.1f decode %.1f merge %.1f step %.1f\n", $1, $3, $4, $6, $7, $8, $13, $14, $15, $16}' "$OUT/beside$i.csv"
  grep -o "beside([^)]*)" "$OUT/beside$i.txt"
done
d="$OUT/trace"; mkdir -p "$d"
LD_LIBRARY_PATH=/tmp/b CUDA_INJECTION64_PATH=/tmp/b/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR="$d" \
  timeout 100 $B -d 128 --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 0 \
  --beside none,spin,fma,dram,l2 --csv "$d/bench.csv" >"$d/out.txt" 2>&1
echo "trace rc=$? $(grep -o 'beside([^)]*)' "$d/out.txt")"
python3 bench/trace/timeline.py "$d"/trace.*.csv --flush-mib 200 --top 8 >"$d/timeline.txt" 2>&1
echo "timeline rc=$?"; head -120 "$d/timeline.txt"
pack_logs
