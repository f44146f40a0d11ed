#!/usr/bin/env bash
# Session 24 (nvidia-h200): the planner's narrow-CTA candidate (PlanOptions::narrow_tile_rows: the
# cascade with 64-row prefix items, so that the decode streams beside the narrow prefix CTA).
# Binaries carried as $CARRY/bins.tar.xz; logs in $OUT.
# PHASE=1|2: session 23's broad calibration grid (B 8-256; P 128-32768; S 32, 64, 256, 512; fp16),
#   now with the narrow cascade timed too wherever it differs from the cascade; phase 1 heads 32/32
#   and 32/8, phase 2 heads 64/8 (one device call each: the whole grid does not fit in one). The
#   fit of each is only printed; the defaults are fitted on both together (cost_model_test.cc).
#   run 2: CARRY=.carry/s24b PHASE=1;  run 3: CARRY=.carry/s24b PHASE=2
# PHASE=3: the built-in defaults as committed after runs 2-3: the GPU tests matching FILTER (all by
#   default), then the planner check on the issue's grid (fp16 and bf16, P 128 and 256 added).
# PHASE=4: the same defaults, planner checks on two held-out sets and the unseen set of sessions
#   17-23 (bf16).
#   run 4: CARRY=.carry/s24c PHASE=3;  run 5: CARRY=.carry/s24c PHASE=4 (binaries before the
#   tiny-prefix exclusion of the narrow candidate)
#   run 6: CARRY=.carry/s24d bash bench/kernel/final-check.sh (the committed planner: GPU suite,
#   sanitizers, grid, head_dim rows, planner check);  run 7: CARRY=.carry/s24d PHASE=4
#   runs 9-10, the calibration again with the half cascade (half the prefix item target) timed too
#   (its data: tests/unit/kernels/h200_s24b_calibration.inc): CARRY=.carry/s24e PHASE=1, PHASE=2
#   (run 8 is bench/kernel/sessions/s24-target.sh)
#   run 11 (the free-SM term, reverted): CARRY=.carry/s24f OUT=$OUT/final bash bench/kernel/final-check.sh,
#   then CARRY=.carry/s24f PHASE=4 OUT=$OUT/held; run 13 (the committed planner, narrow candidate at
#   head_dim 128 only): the same with CARRY=.carry/s24g (run 12 is bench/kernel/sessions/s24-d64.sh)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s24-calibrate
PHASE=${PHASE:?set PHASE to 1, 2, 3 or 4}
GRID="-b 8,16,32,64,128,256 -p 128,256,512,1024,8192,32768 -s 32,64,256,512 --dtype fp16 -c 1"
if [ "$PHASE" = 1 ] || [ "$PHASE" = 2 ]; then
  heads=32/32,32/8; [ "$PHASE" = 2 ] && heads=64/8
  timeout 570 $B --calibrate "$OUT/cost_model_h200.txt" --heads $heads $GRID >"$OUT/calibrate-$PHASE.txt" 2>&1
  echo "== calibration, heads $heads: rc=$?"; grep -E "WRONG|^# fit:" "$OUT/calibrate-$PHASE.txt" | head -4
  grep -c " narrow " "$OUT/calibrate-$PHASE.txt"
fi
check() {  # name, dtypes, bench shape arguments...
  local name=$1 dtypes=$2; shift 2
  timeout 170 $B --planner-check "$@" --dtype $dtypes -c 1 >"$OUT/$name.txt" 2>&1
  echo "== $name (built-in defaults): rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/$name.txt" | head -12
}
if [ "$PHASE" = 3 ]; then
  run_gpu_tests "${FILTER:-*}"
  grep -E "^\[  FAILED  \]" "$OUT/tests.log" | head -5
  check grid fp16,bf16
fi
if [ "$PHASE" = 4 ]; then
  check heldout bf16 --heads 32/4,16/16,32/8 -b 24,96,192 -p 384,768,4096 -s 128,384
  check heldout2 bf16 --heads 32/16,16/4,64/16 -b 12,48,160 -p 640,3072,12288 -s 96,320
  check unseen bf16 --heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512
fi
