#!/usr/bin/env bash
# Session 100, run 6, on .carry/s100d (run 5's candidate mended: the model's plan for its TMA decode
# at 8 warps per CTA, its k chosen for 8 warps, CascadePlan::concurrent_tma_warps; plus s100a's
# kernel benchmark, 11d6dc3's, as prefixd_kernel_bench_old). (1) The new GPU test
# (ThePlansOwnTmaWarpsRun), the concurrent, planner and 16-bit GPU tests; memcheck on the new one.
# (2) On an H200 (the bar's card): the bar grid and head_dim rows (the measured choice, now with the
# candidate), the headline's k scan and, while under 330 s, the planner checks. (3) The measured
# choice against 11d6dc3's (old new old new) at 32/8 D128 B128-256 P32768 S128-512 (runs 3-4: 8 warps
# faster at B128-192, slower at B256 S512).
#   mkdir -p /tmp/carry100d && cp build/bench/prefixd_kernel_bench build/tests/prefixd_gpu_tests \
#     build/launch/prefixd /tmp/carry100d/ && tar -C /tmp/carry100d -xJf .carry/s100a/bins.tar.xz \
#     --transform 's,prefixd_kernel_bench$,prefixd_kernel_bench_old,' ./prefixd_kernel_bench && \
#     mkdir -p .carry/s100d && tar -C /tmp/carry100d -cf - . | xz -6 -T2 > .carry/s100d/bins.tar.xz
#   CARRY=.carry/s100d bash bench/kernel/sessions/s100-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s100-run6
GPU_TESTS_TIMEOUT=200 run_gpu_tests 'CudaConcurrentCascade.*:CudaPlanner.*:CudaMergeStates*:*StatesIn16Bits*'
MEMCHECK_TIMEOUT=60 run_memcheck '*ThePlansOwnTmaWarpsRun*'
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PLANNER_BEFORE_S=330 run_h200_bar_checks
fi
if [ "$SECONDS" -lt 380 ]; then
  run_bench_ab "$OUT/ab" --heads 32/8 -d 128 -b 128,192,256 -p 32768 -s 128,256,512 --dtype fp16,bf16 \
    --measured-choice --no-baseline --no-graph -c 1
  for f in "$OUT"/ab/new1.txt; do grep -o "measured-choice([a-z0-9-]*" "$f" | sort | uniq -c; done
fi
echo "elapsed ${SECONDS} s"
pack_logs
