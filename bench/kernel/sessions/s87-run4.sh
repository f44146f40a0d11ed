#!/usr/bin/env bash
# Session 87, run 4 (the same H200 as runs 1-3): run 3's off-grid fp16 planner check again with
# both timing orders (run 3 had one shape's measured choice at 1.060 × plain decode), then the whole
# GPU suite and both sanitizers on this tree's binaries (run_whole_suite). Carry: .carry/s86.
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run4
cp /tmp/b/prefixd_kernel_bench_spec "$B"
cp /tmp/b/prefixd_gpu_tests_spec /tmp/b/prefixd_gpu_tests
for order in plain-first plain-last; do
  timeout 100 $B --planner-check --dtype fp16 --heads 32/8,40/8,64/8 -b 1,37,200 -p 304,5000,65536 -s 1,100,1000 \
    --planner-order $order >"$OUT/odd-fp16-$order.txt" 2>&1
  echo "== odd-fp16 $order rc=$?"; grep -E "planner check:|measured choice" "$OUT/odd-fp16-$order.txt" | grep -v "must be"
done
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=240 run_whole_suite
pack_logs
