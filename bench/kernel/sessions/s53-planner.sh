#!/usr/bin/env bash
# Session 53, run 4 (nvidia-h200): the planner check on the issue's head_dim-128 grid with P 128 and
# 256 added (prefixd_kernel_bench --planner-check's default grid: heads 32/32 and 32/8, B 16/64/256,
# P 128-32768, S 32/256), fp16 and bf16, on the kernels and planner of session 52 (binaries of
# commit 5d44b68, whose kernels and planner are HEAD's): per shape the cascade, plain decode, the
# narrow and half cascades where they differ, and the planner's choice (its concurrent mode
# included), each timed; exit 1 where a choice is > 5% slower than the fastest other layout.
#   CARRY=.carry/s53b-old bash bench/kernel/sessions/s53-planner.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s53-planner
for dt in fp16 bf16; do
  timeout 220 $B --planner-check --dtype $dt >"$OUT/planner-$dt.txt" 2>&1
  echo "planner $dt rc=$? $(grep -cE '^ +(fp16|bf16) ' "$OUT/planner-$dt.txt") shapes"
  tail -6 "$OUT/planner-$dt.txt"
done
pack_logs
