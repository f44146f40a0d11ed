#!/usr/bin/env bash
# Session 65, run 7 (nvidia-h200): how much of the concurrent step's merge part (~13.8 µs at 32/8
# B256 P32768 S256, 8192 rows of 4-5 states) is the flush (states evicted, the flush's dirty lines
# written back) and how much is the kernel's own latency: the parts timed under each flush mode
# (write: the issue's method; clean; none: the states still in L2 from the iteration before), the
# headline shape and two more concurrent ones, fp16 and bf16, on the final binaries.
#   CARRY=.carry/s65b bash bench/kernel/sessions/s65-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s65-run7
for f in write clean none; do
  timeout 150 $B -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256,512 --dtype fp16,bf16 --no-baseline --no-graph -c 1 \
    --flush $f --csv "$OUT/flush-$f.csv" >"$OUT/flush-$f.txt" 2>&1
  echo "flush $f rc=$?"
  cut -d, -f1,6-8,9-16 "$OUT/flush-$f.csv"
done
pack_logs
