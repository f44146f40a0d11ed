#!/usr/bin/env bash
# Session 63, run 3 (nvidia-h200), on session 61's final binaries (commit e43cba6): the grid's small
# steps (P1024-8192, B16-64), whose misses are launch- and latency-bound (32/8 B16 P1024 S32: 13.6 µs,
# bar 11.5, its parts alone 10.2 and 10.3 with 3.7 µs of empty region in each). Is the one-launch
# fused cascade (PREFIXD_FUSED=1: slower on the large shapes, s9-10) faster where one launch
# and one cold chain are most of the step? And how much of the step is the prefix → decode handoff
# (PDL off, trigger off)? Each variant in one process against the default; plain decode as the
# baseline column.
#   CARRY=.carry/s63a bash bench/kernel/sessions/s63-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s63-run3
timeout 400 $B -d 128 --heads 32/8,32/32 -b 16,64 -p 1024,8192 -s 32,256 --dtype fp16 --no-graph -c 1 \
  --variants "default,fused,fused-mk,nopdl,notrigger" --csv "$OUT/small.csv" >"$OUT/small.txt" 2>&1
echo "small rc=$? $(grep 'wrong results' "$OUT/small.txt")"
show_parts small | cut -c1-200
SHOW_LINES=60 show_variants small | grep -v "^#$" | cut -c1-250
awk -F, 'NR>1 && $NF=="default" {printf "%s/%s B%s P%s S%s total %s plain %s\n",$3,$4,$6,$7,$8,$16,$25}' "$OUT/small.csv"
pack_logs
