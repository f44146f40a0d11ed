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
set -uo pipefail
cd "$(dirname "$0")/../.."
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
if [ "$PHASE" = all ] || [ "$PHASE" = 2 ]; then
  UNSEEN="--heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512 --dtype bf16 -c 1"
  timeout 170 $B "${model[@]}" --planner-check $UNSEEN >"$OUT/unseen.txt" 2>&1
  echo "== held out, unseen bf16 shapes: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/unseen.txt" | head -12
  timeout 170 $B "${model[@]}" --planner-check --dtype bf16 -c 1 >"$OUT/grid-bf16.txt" 2>&1
  echo "== held out, grid in bf16: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/grid-bf16.txt" | head -12
fi
