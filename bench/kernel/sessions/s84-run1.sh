#!/usr/bin/env bash
# Session 84, run 1 (nvidia-h200): session 83's run 1, which no machine ran then (its planner
# check of 32/32 B256 P32768 in both orders, twice; session 75's four planner checks; the GPU tests
# of the measured choice, the planner and the balanced grid), on this session's carry. Logs in
# /tmp/s83-run1 (its tag).
#   mkdir -p .carry/s84 && tar -C build -cJf .carry/s84/bins.tar.xz --transform 's,.*/,./,' \
#     bench/prefixd_kernel_bench tests/prefixd_gpu_tests
#   CARRY=.carry/s84 bash bench/kernel/sessions/s84-run1.sh
exec bash "$(dirname "$0")/s83-run1.sh"
