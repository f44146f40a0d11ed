#!/usr/bin/env bash
# Session 17, one device call (nvidia-h200): the cost model recalibrated on today's kernels
# (--calibrate over the planner grid, fp16 and bf16, then --planner-check with the fitted
# parameters), and the planner check on shapes neither fit saw (heads 32/32, 32/8, 64/8; B 8/32/128;
# P 128/512/2048/8192; S 64/512; bf16) with the built-in parameters and with the fitted ones.
# Binaries carried as $CARRY/bins.tar.xz. Output: $OUT/{calib.txt,cost_model_s17.txt,unseen-*.txt}.
#   run 7 (binaries with the gated fine-chunk candidate, as committed in 4d3ec7a): CARRY=.carry/s17d
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s17-planner
timeout 330 $B --calibrate "$OUT/cost_model_s17.txt" --planner-check --dtype fp16,bf16 -c 1 >"$OUT/calib.txt" 2>&1
echo "calibrate + check rc=$?"; grep -E "^# fit|SLOW|WRONG|^# planner check:" "$OUT/calib.txt" | head -20
UNSEEN="--heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512 --dtype bf16 -c 1"
timeout 120 $B --planner-check $UNSEEN >"$OUT/unseen-default.txt" 2>&1
echo "unseen, built-in model rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/unseen-default.txt" | head -12
if [ -s "$OUT/cost_model_s17.txt" ]; then
  timeout 120 $B --planner-check $UNSEEN --cost-model "$OUT/cost_model_s17.txt" >"$OUT/unseen-fitted.txt" 2>&1
  echo "unseen, fitted model rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/unseen-fitted.txt" | head -12
fi
