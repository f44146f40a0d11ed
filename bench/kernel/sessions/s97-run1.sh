#!/usr/bin/env bash
# Session 97, run 1, on .carry/s97a (e2d8660's binaries; PREFIXD_CONCURRENT_CHAIN=all the default
# since 588cdf8). (1) The four tests mended after s96 run 4 and every concurrent, early-decode, graph
# and cascade test on the default; memcheck on the new and mended ones. (2) On an H200 (the bar's
# card): the grid and head_dim rows with the new default (run_bar_grid); on an H100: the head_dim-256
# A/B, the default against =1 (the TMA-only chain), as s96 run 5 planned. On an H200 also
# session 94's unrun k scan at the headline row and, with time left (PLANNER_BEFORE_S: start them
# only before this many seconds, 400), its planner checks on the grid's shapes (fp16, bf16).
# Ran in s97 on an H100 with PLANNER_BEFORE_S=200 (bench/RESULTS.md, session 97, run 1).
#   mkdir -p .carry/s97a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s97a/bins.tar.xz   # built at e2d8660
#   CARRY=.carry/s97a bash bench/kernel/sessions/s97-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s97-run1
GPU_TESTS_TIMEOUT=150 run_gpu_tests 'CudaConcurrentCascade.*:CudaEarlyDecode.*:CudaGraph.*:CudaCascade.*'
MEMCHECK_TIMEOUT=80 run_memcheck '*OneItem*:CudaGraph.ConcurrentStepReplaysCorrectly:CudaConcurrentCascade.Switch*'
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  run_h200_bar_checks
else
  RUN_TIMEOUT=100 run_variants d256 "default,PREFIXD_CONCURRENT_CHAIN=1" --heads 32/8 -d 256 -b 256 -p 32768 \
    -s 256,512 --dtype fp16,bf16
  SHOW_LINES=8 show_variants d256
fi
echo "elapsed ${SECONDS} s"
pack_logs
