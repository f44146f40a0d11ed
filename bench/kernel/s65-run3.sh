#!/usr/bin/env bash
# Session 65, run 3 (nvidia-h200): on the same binaries as run 2, the issue's grid and head_dim rows,
# then the planner check (prefixd_kernel_bench --planner-check's default grid: 32/32 and 32/8,
# B 16/64/256, P 128-32768, S 32/256), fp16 and bf16; not run on the kernels since session 53.
#   CARRY=.carry/s65b bash bench/kernel/s65-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s65-run3
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -4
for dt in fp16 bf16; do
  timeout 220 $B --planner-check --dtype $dt >"$OUT/planner-$dt.txt" 2>&1
  echo "planner $dt rc=$? $(grep -cE '^ +(fp16|bf16) ' "$OUT/planner-$dt.txt") shapes"
  tail -6 "$OUT/planner-$dt.txt"
done
pack_logs
