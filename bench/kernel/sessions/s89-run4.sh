#!/usr/bin/env bash
# Session 89, run 4: the planner with k = 8, 10 and 12 among the concurrent TMA step's candidates
# (72a7dfc) on the device. On an H200 first the grid (run_bar_grid; no grid shape's plan changed,
# CPU planner check). Then on any card: (1) the concurrent, planner and measured-choice GPU tests
# (8 shards), among them the new PREFIXD_CONCURRENT_TMA_CANDIDATES check; (2) the main job on one
# rank (the worker plans with the new candidates); (3) the planner check (the model's choice and
# the measured choice against the cascade and plain decode) with the session-60 candidates
# (PREFIXD_CONCURRENT_TMA_CANDIDATES=14,16,...) and with the new built-in ones, at shapes whose
# model choice the new candidates change (CPU planner check over 300 shapes: 112 changed, all
# prefix-bound with S ≤ 192), 32/8, 32/4 and 64/8, fp16 and one bf16 set.
# Carry .carry/s89b (ignored, local): 72a7dfc's prefixd_kernel_bench, prefixd_gpu_tests, prefixd,
# prefixd_mpi_tests:
#   mkdir -p .carry/s89b && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests tests/prefixd_mpi_tests launch/prefixd | xz -6 -T2 > .carry/s89b/bins.tar.xz
#   CARRY=.carry/s89b bash bench/kernel/sessions/s89-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run4
run_bar_grid
run_test_shards 'CudaConcurrent*:*Planner*:*Measured*'
run_main_job_one_rank 'Engine*:*Worker*' 150 100
OLD=14,16,20,28,36,48,56,64
sets=("fp16 --heads 64/8 -b 128,256,384 -p 32768 -s 64,192"
      "fp16 --heads 32/4 -b 256 -p 32768,65536 -s 128,192"
      "fp16 --heads 32/8 -b 96,192 -p 65536 -s 96,192"
      "fp16 --heads 32/8 -b 256 -p 65536 -s 48,128"
      "bf16 --heads 64/8 -b 256 -p 32768 -s 128")
i=0
for s in "${sets[@]}"; do
  i=$((i + 1))
  for cand in old new; do
    if [ $cand = old ]; then export PREFIXD_CONCURRENT_TMA_CANDIDATES=$OLD; else unset PREFIXD_CONCURRENT_TMA_CANDIDATES; fi
    run_planner_set check$i-$cand "$B" "$s"
  done
done
unset PREFIXD_CONCURRENT_TMA_CANDIDATES
pack_logs
