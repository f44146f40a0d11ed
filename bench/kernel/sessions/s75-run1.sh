#!/usr/bin/env bash
# Session 75, run 1 (nvidia-h200): the planner check off the issue's grid, on shapes no earlier
# check timed (odd batch sizes, prefixes that do not fill their last page, suffixes of 1 and 1000
# tokens, GQA 5 and 8, head_dim 64 and 256 at GQA 3 and 8, page 8): per shape the cascade, plain
# decode (where the prefix fills whole pages), the narrow and half cascades and the planner's
# choice, each checked against the CPU backend on sampled requests.
#   CARRY=.carry/s75a bash bench/kernel/sessions/s75-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run1
summary() {  # summary NAME: exit status, shape count, the check's summary lines, the rows over 1.05
  echo "== $1 rc=$2, $(grep -cE '^ +(fp16|bf16) ' "$OUT/$1.txt") shapes"
  grep -E "planner check:|wrong" "$OUT/$1.txt" | grep -v "must be" | sort -u
  grep -E "SLOW|WRONG|FAIL" "$OUT/$1.txt" | grep -E '^ +(fp16|bf16) ' | head -20
}
timeout 330 $B --planner-check --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 \
  -s 1,100,1000 >"$OUT/odd-fp16.txt" 2>&1
summary odd-fp16 $?
timeout 200 $B --planner-check --dtype bf16 --heads 16/2,24/8 -d 64,256 -b 3,100 -p 1000,12344 \
  -s 7,300 --page-size 8 >"$OUT/odd-bf16.txt" 2>&1
summary odd-bf16 $?
pack_logs
