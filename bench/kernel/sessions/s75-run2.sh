#!/usr/bin/env bash
# Session 75, run 2 (nvidia-h200): the cost model's calibration samples (`--calibrate`: every part
# of the cascade, plain decode, the narrow and half cascades timed alone, and their totals) on the
# planner check's default grid (fp16, 60 shapes) and on run 1's off-grid shapes (81 fp16, 32 bf16),
# so that the model's errors off the grid can be read part by part and a fit can use all three.
#   CARRY=.carry/s75a bash bench/kernel/sessions/s75-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s75-run2
calibrate() {  # calibrate NAME SECONDS ARGS...: the samples in $OUT/NAME.txt, the fit in $OUT/NAME-model.txt
  local name=$1 secs=$2; shift 2
  timeout "$secs" $B --calibrate "$OUT/$name-model.txt" "$@" >"$OUT/$name.txt" 2>&1
  echo "== $name rc=$? $(grep -c '^#   [fb][pf]16 ' "$OUT/$name.txt") samples; $(grep -m1 'RMS\|rms' "$OUT/$name.txt")"
}
calibrate grid-fp16 200 --dtype fp16
calibrate odd-fp16 200 --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 -s 1,100,1000
calibrate odd-bf16 150 --dtype bf16 --heads 16/2,24/8 -d 64,256 -b 3,100 -p 1000,12344 -s 7,300 --page-size 8
pack_logs
