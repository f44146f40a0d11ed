#!/usr/bin/env bash
# Session 50, run 4 (nvidia-h200): the fused kernel's suffix warps as in run 1's build (a partial
# last step's V rows zeroed in shared memory by one compute warp) plus a barrier of both compute
# warps before those stores, so that racecheck sees the other warp's reads of the stage ordered
# before them (run 3: masking V in registers instead made full steps 2-6% slower).
#   1. the fused GPU tests, the NaN-outside-the-requests cases, memcheck and racecheck on the fused
#      cases (the fused merge cases reported 34 hazards in run 1);
#   2. PREFIXD_FUSED=1, run 1's build against this one, alternated twice, S100 (a partial last step
#      per item) and S256 (none) at 32/8 B64/B256 P8192/P32768.
#   CARRY=.carry/s50d CARRY_A=.carry/s50a-bench bash bench/kernel/sessions/s50-fix.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s50-fix
mkdir -p /tmp/A && tar -C /tmp/A -xJf "${CARRY_A:?}/bins.tar.xz"
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*NaNOutsideTheRequests*:*CudaFused*:*FusedMerge*'
run_sanitizers 'Shapes/CudaFusedMergeTest*:CudaFusedCascade.NaNOutside*:*CudaFusedCascadeTest*mixed_groups*:*CudaFusedCascadeTest*page32*'
run_build_rounds fused "A b" -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 100,256 --dtype fp16 --no-baseline \
  --no-graph -c 1 --variants PREFIXD_FUSED=1
pack_logs
