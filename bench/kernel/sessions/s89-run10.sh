#!/usr/bin/env bash
# Session 89, run 10: the concurrent TMA step at head_dim 64 (PlanOptions::
# concurrent_tma_min_head_dim = 64, the TMA decode's head_dim-64 rate concurrent_tma_d64_*, fitted
# on run 9) in the planner check, the build before it (1b26ae0, prefixd_kernel_bench_old) against
# this tree's, one process after the other on the same card: the model's choice and the measured
# choice (the worker's plan) against the cascade and plain decode, at head_dim-64 shapes whose
# model choice changes (a CPU planner check: 20 of 108 there, none of the default 233) — 32/8
# B128-256 P8192-32768 S128-512, 64/8 and 32/4 B256 P32768 S128/S512 fp16, 32/8 B256 P32768 S256
# bf16. On an H200 first the grid (run_bar_grid, this tree's binary: its head_dim-64 32/8 rows now
# take the mode).
# Carry .carry/s89d (ignored, local): this tree's prefixd_kernel_bench and 1b26ae0's as
# prefixd_kernel_bench_old (from .carry/s89c), xz-packed as bins.tar.xz.
#   CARRY=.carry/s89d bash bench/kernel/sessions/s89-run10.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run10
run_bar_grid
sets=("fp16 -d 64 --heads 32/8 -b 128,256 -p 8192,32768 -s 128,256,512"
      "fp16 -d 64 --heads 64/8,32/4 -b 256 -p 32768 -s 128,512"
      "bf16 -d 64 --heads 32/8 -b 256 -p 32768 -s 256")
i=0
for s in "${sets[@]}"; do
  i=$((i + 1))
  run_planner_set check$i-old /tmp/b/prefixd_kernel_bench_old "$s"
  run_planner_set check$i-new "$B" "$s"
done
pack_logs
