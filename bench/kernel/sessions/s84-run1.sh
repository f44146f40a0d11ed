#!/usr/bin/env bash
# Session 84, run 1 (nvidia-h200): session 83's run 1, which no machine ran then. s82 run 1's one
# planner miss — the measured choice kept the half-target cascade at bf16 32/32 B256 P32768 S256,
# which the planner check timed 12% slower than the cascade. Session 83 found on the CPU that the
# two were the same GPU work (now one candidate: kernels::ScheduleKey) and that the check timed the
# half right after plain decode's ~0.9 s of 26 ms steps (now plain last). This run checks that
# reading and re-runs the planner item (~4 min):
#   1. the planner check of 32/32 B256 P32768 S32 and S256, fp16 and bf16, in the order before
#      session 83 (--planner-order plain-first: plain decode's 22-26 ms steps right before the
#      narrow cascade) and in the new one (plain last), twice in turn. The half cascade is no longer
#      timed there (the cascade's schedule). Expected if the clock explains s82's miss: the narrow
#      cascade (527.9 / 695.3 µs bf16 S32 / S256 in s82, timed after plain; predicted 399.5 /
#      594.5) several % faster with plain last;
#   2. session 75's four planner checks (233 shapes): item 4's planner figure on this tree;
#   3. the GPU tests of the measured choice, the planner and the balanced prefix grid.
# Carry: this tree's kernel bench and GPU tests, e.g.
#   mkdir -p .carry/s84 && tar -C build -cJf .carry/s84/bins.tar.xz --transform 's,.*/,./,' \
#     bench/prefixd_kernel_bench tests/prefixd_gpu_tests
#   CARRY=.carry/s84 bash bench/kernel/sessions/s84-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s84-run1
for i in 1 2; do for order in plain-first plain-last; do
  name=order-$order-$i
  timeout 150 $B --planner-check --heads 32/32 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 -c 1 --copy-gib 1 \
    --settle-ms 200 --planner-order $order >"$OUT/$name.txt" 2>&1
  echo "== $name rc=$?: cascade / plain / choice ... | narrow | half (us) | measured"
  grep -E '^ +(fp16|bf16) ' "$OUT/$name.txt" | cut -d'|' -f1,2,6,7,8
done; done
run_offgrid_planner_checks
run_gpu_tests 'CudaPlanner*:*Measured*:*Balance*'
pack_logs
