#!/usr/bin/env bash
# Session 23, one device call (nvidia-h200): a fresh calibration of the planner's cost model on
# today's kernels (the built-in defaults are session 8's fit, before the narrow prefix CTA), with
# the model's new narrow_overlap_frac term, then planner checks with the fitted file on shapes the
# fit never saw. Binaries carried as $CARRY/bins.tar.xz. Logs: $OUT.
#   1. --calibrate on fp16, heads 32/32 and 32/8, B 8/16/64/256, P 128-32768, S 32/256 (80 shapes:
#      every part of the cascade and of plain decode timed alone, and both totals), then the
#      planner check on those shapes with the fitted parameters;
#   2. held out, with the fitted file (--cost-model): the 72 unseen bf16 shapes of sessions 17-22
#      (heads 32/32, 32/8, 64/8; B 8/32/128; P 128-8192; S 64/512), and the issue's grid in bf16
#      (P 128 and 256 added).
# PHASE=1 or 2 runs one of them; PHASE=2 without COST_MODEL checks the built-in defaults (as
# committed after run 1: its fit, and the tiny-prefix rule at 256 tokens). FILTER: also the carried
# GPU tests matching it, first.
#   run 1: CARRY=.carry/s23a PHASE=1
#   run 2: CARRY=.carry/s23b PHASE=2 FILTER='*CudaPlanner*:*CudaCascade*:*Planner*'
# PHASE=3: the calibration on a broader grid (heads 32/32, 32/8, 64/8; B 8-256; P 128-32768; S 32,
# 64, 256, 512; fp16: 432 shapes), then, with its fit, checks on new held-out bf16 shapes (heads
# 32/4, 16/16, 32/8; B 24/96/192; P 384/768/4096; S 128/384), the 72 earlier unseen shapes and the
# grid in bf16.
#   run 3: CARRY=.carry/s23b PHASE=3
# PHASE=4: the built-in defaults as committed after run 3 (its fit, the split options' margin): the
# whole GPU suite, then planner checks on run 3's held-out shapes, a second new held-out set (heads
# 32/16, 16/4, 64/16; B 12/48/160; P 640/3072/12288; S 96/320; bf16), the 72 unseen shapes and the
# grid in fp16 and bf16.
#   run 4: CARRY=.carry/s23c PHASE=4
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s23-calibrate
PHASE=${PHASE:-all}
fitted=${COST_MODEL:-$OUT/cost_model_h200.txt}
model=(--cost-model "$fitted")
[ "$PHASE" = 2 ] && [ -z "${COST_MODEL:-}" ] && model=()
[ -n "${FILTER:-}" ] && run_gpu_tests "$FILTER"
if [ "$PHASE" = all ] || [ "$PHASE" = 1 ]; then
  timeout 420 $B --calibrate "$fitted" --planner-check --heads 32/32,32/8 -b 8,16,64,256 \
    -p 128,256,1024,8192,32768 -s 32,256 --dtype fp16 -c 1 >"$OUT/calibrate.txt" 2>&1
  echo "== calibrate + check on the fitted shapes: rc=$?"
  grep -E "SLOW|WRONG|^# fit:|^# planner check:" "$OUT/calibrate.txt" | head -12
fi
if [ "$PHASE" = 3 ]; then
  timeout 480 $B --calibrate "$fitted" --heads 32/32,32/8,64/8 -b 8,16,32,64,128,256 \
    -p 128,256,512,1024,8192,32768 -s 32,64,256,512 --dtype fp16 -c 1 >"$OUT/calibrate-broad.txt" 2>&1
  echo "== broad calibration: rc=$?"; grep -E "WRONG|^# fit:" "$OUT/calibrate-broad.txt" | head -4
  HELD="--heads 32/4,16/16,32/8 -b 24,96,192 -p 384,768,4096 -s 128,384 --dtype bf16 -c 1"
  timeout 100 $B --cost-model "$fitted" --planner-check $HELD >"$OUT/heldout.txt" 2>&1
  echo "== held out (new shapes): rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/heldout.txt" | head -12
fi
if [ "$PHASE" = 4 ]; then
  run_gpu_tests '*'
  model=()
  for set in "heldout:--heads 32/4,16/16,32/8 -b 24,96,192 -p 384,768,4096 -s 128,384" \
             "heldout2:--heads 32/16,16/4,64/16 -b 12,48,160 -p 640,3072,12288 -s 96,320" \
             "unseen:--heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512" "grid:"; do
    name=${set%%:*}
    dtypes=bf16; [ "$name" = grid ] && dtypes=fp16,bf16
    timeout 150 $B --planner-check ${set#*:} --dtype $dtypes -c 1 >"$OUT/$name.txt" 2>&1
    echo "== $name (built-in defaults): rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/$name.txt" | head -12
  done
fi
if [ "$PHASE" = all ] || [ "$PHASE" = 2 ] || [ "$PHASE" = 3 ]; then
  UNSEEN="--heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512 --dtype bf16 -c 1"
  timeout 170 $B "${model[@]}" --planner-check $UNSEEN >"$OUT/unseen.txt" 2>&1
  echo "== held out, unseen bf16 shapes: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/unseen.txt" | head -12
  timeout 170 $B "${model[@]}" --planner-check --dtype bf16 -c 1 >"$OUT/grid-bf16.txt" 2>&1
  echo "== held out, grid in bf16: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/grid-bf16.txt" | head -12
fi
