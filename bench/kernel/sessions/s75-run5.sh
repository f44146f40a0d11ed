#!/usr/bin/env bash
# Session 75, run 5 (nvidia-h200): the cost model refitted on today's kernels (this session's merge
# included) over a broad fp16 head_dim-128 set, then the planner check with the fitted model on
# shapes it was not fitted on.
#   1. `--calibrate` (every part of the cascade, plain decode, the narrow and half cascades timed
#      alone) on heads 32/32, 32/8, 64/8 × B 1/16/64/200 × P 304/1024/5000/32768 × S 1/32/256/1000
#      (192 shapes; the defaults are session 24's fit, 50 sessions of kernel changes old), with the
#      planner check on the same shapes with the fitted model; the fit in $OUT/cost_model_h200_s75.txt;
#   2. the planner check with that model (`--cost-model`) on the default grid (fp16, bf16) and on
#      run 1's off-grid shapes (81 fp16, 32 bf16 at head_dim 64/256, page 8).
#   CARRY=.carry/s75b bash bench/kernel/sessions/s75-run5.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run5
M=$OUT/cost_model_h200_s75.txt
summary() { echo "== $1 rc=$2, $(grep -cE '^ +(fp16|bf16) ' "$OUT/$1.txt") rows"
  grep -E "^# fit:|planner check:" "$OUT/$1.txt" | grep -v "must be"
  grep -E "SLOW|WRONG" "$OUT/$1.txt" | grep -E '^ +(fp16|bf16) ' | head -12; }
timeout 360 $B --calibrate "$M" --planner-check --dtype fp16 --heads 32/32,32/8,64/8 -b 1,16,64,200 \
  -p 304,1024,5000,32768 -s 1,32,256,1000 >"$OUT/train.txt" 2>&1
summary train $?
[ -s "$M" ] || { echo "no fitted model"; pack_logs; exit 1; }
check() { local name=$1; shift; timeout 80 $B --planner-check --cost-model "$M" "$@" >"$OUT/$name.txt" 2>&1; summary $name $?; }
check grid-fp16 --dtype fp16
check grid-bf16 --dtype bf16
check odd-fp16 --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 -s 1,100,1000
check odd-bf16 --dtype bf16 --heads 16/2,24/8 -d 64,256 -b 3,100 -p 1000,12344 -s 7,300 --page-size 8
pack_logs
