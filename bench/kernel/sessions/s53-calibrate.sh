#!/usr/bin/env bash
# Session 53, run 5 (nvidia-h200): the cost model's calibration on today's kernels (HEAD's, binaries
# of 5d44b68), on the planner check's default grid (heads 32/32 and 32/8, B 16/64/256, P
# 128-32768, S 32/256, fp16): every part of the cascade, plain decode, narrow and half cascades
# timed alone, the model fitted to them (written to $OUT/cost_model_h200_s53.txt), then the planner
# check with the fitted model in the same process. Session 24's calibration (two calls, 432
# shapes) is what the built-in defaults come from; this is the first on the kernels since.
#   CARRY=.carry/s53b-old bash bench/kernel/sessions/s53-calibrate.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s53-calibrate
timeout 270 $B --calibrate "$OUT/cost_model_h200_s53.txt" --planner-check --dtype fp16 -c 1 >"$OUT/calibrate.txt" 2>&1
echo "calibrate rc=$?"
grep -E "^# fit|^# planner check|WRONG" "$OUT/calibrate.txt" | head -12
pack_logs
