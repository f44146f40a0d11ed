#!/usr/bin/env bash
# Session 50, run 2 (nvidia-h200):
#   1. the fused kernel's suffix warps masking a last step's invalid tokens in registers (no shared
#      stores, no barrier): its GPU tests, the new NaN-outside-the-requests cases (default,
#      concurrent, persistent TMA and fused backends), racecheck on the cases that reported hazards
#      in run 1 (Shapes/CudaFusedMergeTest) and on the fused NaN case, memcheck on the NaN cases;
#      then the fused kernel (PREFIXD_FUSED=1) old build (run 1's, $CARRY_OLD) against new;
#   2. the concurrent mode (prefix on SMs - k CTAs, the decode beside it: the persistent TMA decode
#      where it fits) forced at k = 12/20/36 on grid shapes that miss their bar by the decode's or
#      the ramp's time (stream-bound prefixes at 32/32, and 32/8 B64), against the planner's plan.
#   CARRY=.carry/s50b CARRY_OLD=.carry/s50a bash bench/kernel/sessions/s50-conc.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s50-conc
mkdir -p /tmp/old && tar -C /tmp/old -xJf "${CARRY_OLD:?}/bins.tar.xz"
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*NaNOutsideTheRequests*:*CudaFused*:*FusedMerge*'
cp "$OUT/tests.log" "$OUT/tests-fused.log"
run_sanitizers 'Shapes/CudaFusedMergeTest*:CudaFusedCascade.NaNOutside*'
for b in /tmp/old /tmp/b; do
  timeout 60 $b/prefixd_kernel_bench -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16 --no-baseline \
    --no-graph -c 1 --variants PREFIXD_FUSED=1 --csv "$OUT/fused-$(basename $b).csv" >"$OUT/fused-$(basename $b).txt" 2>&1
  echo "fused $b rc=$?"
done
show_parts fused-old fused-b
V=default,PREFIXD_CONCURRENT_DECODE_SMS=12,PREFIXD_CONCURRENT_DECODE_SMS=20,PREFIXD_CONCURRENT_DECODE_SMS=36
RUN_TIMEOUT=150 run_variants c32 "$V" -d 128 --heads 32/32 -b 16,64 -p 1024,8192 -s 32,256 --dtype fp16
RUN_TIMEOUT=100 run_variants c8 "$V" -d 128 --heads 32/8 -b 64 -p 8192,32768 -s 32,256 --dtype fp16
show_parts c32 c8
pack_logs
