#!/usr/bin/env bash
# Session 85, run 4 (nvidia-h200): the final tree's grid and head_dim rows (bench/kernel/issue4-grid.sh:
# the measured choice, read floors; tables by fused_floor_table.py), then the whole GPU suite in 12
# shards with launch/gpu-check.sh's memcheck and racecheck lists, each step time-limited so that the
# call ends inside 600 s. Carry: this tree's kernel bench and GPU tests, flattened:
#   mkdir -p .carry/s85d && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests | xz -9 -T2 > .carry/s85d/bins.tar.xz
#   CARRY=.carry/s85d bash bench/kernel/sessions/s85-run4.sh
# Not run in session 85: no machine started for it (seven refused starts spent the device budget).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s85-run4
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | grep -E "rc=|of 72|of 8|shapes within"
grep -E "^ +(fp16|bf16) +16 +32/8 +128 +256 +(1024|32768) +256 " "$OUT/grid/grid.txt" | cut -c1-140
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=150 PREFIXD_TIMEOUT_MEMCHECK=200 PREFIXD_TIMEOUT_RACECHECK=120 \
  run_whole_suite
pack_logs
