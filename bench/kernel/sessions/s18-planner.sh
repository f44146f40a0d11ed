#!/usr/bin/env bash
# Session 18, one device call (nvidia-h200): the planner check (--planner-check: P 128-32768, both
# head pairs, B 16/64/256, S 32/256, fp16 and bf16) with the tiny-prefix rule
# (PlanOptions::tiny_prefix_tokens = 128, the default) and without it (PREFIXD_TINY_PREFIX_TOKENS=0),
# then the 72 unseen bf16 shapes of session 17 (heads 32/32, 32/8, 64/8; B 8/32/128; P 128-8192;
# S 64/512) with the rule. Binaries carried as $CARRY/bins.tar.xz. Logs: $OUT.
#   run 3: CARRY=.carry/s18b (first form of the rule: every P ≤ 128 group; the S32 near-tie went to plain, 1.07-1.09)
#   run 4: CARRY=.carry/s18c SKIP_NORULE=1 (the rule as committed: suffixes of at least half the prefix)
# FILTER: also the carried GPU tests matching it, first.
#   session 22 run 11 (fine chunks gated by suffix/prefix ≤ 2): CARRY=.carry/s22g SKIP_NORULE=1
#     FILTER='*CudaPlanner*:*CudaCascade*'
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s18-planner
[ -n "${FILTER:-}" ] && run_gpu_tests "$FILTER"
timeout 200 $B --planner-check --dtype fp16,bf16 -c 1 >"$OUT/planner-rule.txt" 2>&1
echo "== planner check, tiny-prefix rule on: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/planner-rule.txt" | head -12
if [ -z "${SKIP_NORULE:-}" ]; then
  PREFIXD_TINY_PREFIX_TOKENS=0 timeout 200 $B --planner-check --dtype fp16,bf16 -c 1 >"$OUT/planner-norule.txt" 2>&1
  echo "== planner check, rule off: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/planner-norule.txt" | head -12
fi
UNSEEN="--heads 32/32,32/8,64/8 -b 8,32,128 -p 128,512,2048,8192 -s 64,512 --dtype bf16 -c 1"
timeout 150 $B --planner-check $UNSEEN >"$OUT/unseen-rule.txt" 2>&1
echo "== unseen, rule on: rc=$?"; grep -E "SLOW|WRONG|^# planner check:" "$OUT/unseen-rule.txt" | head -12
echo "== P = 128 rows, rule on:"; grep -E "^ +(fp16|bf16) .* 128 +(32|64|256|512) \|" "$OUT/planner-rule.txt" "$OUT/unseen-rule.txt" | cut -c1-170
