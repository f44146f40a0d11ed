#!/usr/bin/env bash
# Session 87, run 3 (the same H200 as runs 1-2): the planner's bar item on this tree's prefix kernel
# (the speculative softmax changed its speed since s84 run 1 last checked it): the four planner
# checks of run_offgrid_planner_checks (113 off-grid shapes, the grid's 120 in fp16 and bf16), each
# plan measured against the cascade and plain decode. Carry: .carry/s86 (s86-run1.sh's header).
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run3
cp /tmp/b/prefixd_kernel_bench_spec "$B"
run_offgrid_planner_checks
pack_logs
