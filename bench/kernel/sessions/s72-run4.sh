#!/usr/bin/env bash
# Session 72, run 4 (nvidia-h200): the final binaries (the two producer threads of run 1).
#  1. the whole GPU suite (launch/gpu-check.sh: every GPU test in 12 shards, then memcheck and
#     racecheck on its default lists);
#  2. why bf16 runs the compute-bound prefix 2-3% faster than fp16 (sessions 3-71): the SM clock and
#     the board power sampled every 20 ms while the same shape runs in fp16, then bf16, then fp16.
#   CARRY=.carry/s72d bash bench/kernel/sessions/s72-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run4
PREFIXD_TEST_SHARDS=12 run_whole_suite
for dt in fp16 bf16 fp16; do
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 20 >"$OUT/clocks-$dt.txt" 2>&1 &
  smi=$!
  timeout 60 $B --heads 32/8 -b 256 -p 32768 -s 32 --dtype $dt --no-baseline --no-graph -c 1 -n 100 \
    --csv "$OUT/clock-$dt.csv" >"$OUT/clock-$dt.txt" 2>&1
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  awk -F, 'NR>1 {printf "%s prefix %.1f total %.1f us, ", $1, $13, $16}' "$OUT/clock-$dt.csv"
  # The samples while the GPU is busy (power above 300 W): median SM clock and power.
  awk -F', *' '$2 > 300 {print $1, $2}' "$OUT/clocks-$dt.txt" | sort -n | awk '{c[NR]=$1; p[NR]=$2} END {
    if (NR) printf "busy samples %d, SM clock median %s MHz (min %s, max %s)\n", NR, c[int((NR+1)/2)], c[1], c[NR]; else print "no busy samples"}'
  awk -F', *' '$2 > 300 {print $2}' "$OUT/clocks-$dt.txt" | sort -n | awk '{p[NR]=$1} END {if (NR) printf "   power median %s W (max %s)\n", p[int((NR+1)/2)], p[NR]}'
done
pack_logs
