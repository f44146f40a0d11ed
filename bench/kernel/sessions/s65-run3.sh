#!/usr/bin/env bash
# Session 65, run 3 (nvidia-h200): on the same binaries as run 2, the issue's grid and head_dim rows,
# then the planner check (prefixd_kernel_bench --planner-check's default grid: 32/32 and 32/8,
# B 16/64/256, P 128-32768, S 32/256), fp16 and bf16; not run on the kernels since session 53.
#   CARRY=.carry/s65b bash bench/kernel/sessions/s65-run3.sh
# (Its planner loop was moved into device-setup.sh's run_planner_check after the run: the same commands.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s65-run3
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh | tail -4
run_planner_check fp16 bf16
pack_logs
