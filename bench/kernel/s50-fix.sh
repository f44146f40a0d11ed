#!/usr/bin/env bash
# Session 50, run 4 (nvidia-h200): the fused kernel's suffix warps as in run 1's build (a partial
# last step's V rows zeroed in shared memory by one compute warp) plus a barrier of both compute
# warps before those stores, so that racecheck sees the other warp's reads of the stage ordered
# before them (run 3: masking V in registers instead made full steps 2-6% slower).
#   1. the fused GPU tests, the NaN-outside-the-requests cases, memcheck and racecheck on the fused
#      cases (the fused merge cases reported 34 hazards in run 1);
#   2. PREFIXD_FUSED=1, run 1's build against this one, alternated twice, S100 (a partial last step
#      per item) and S256 (none) at 32/8 B64/B256 P8192/P32768.
#   CARRY=.carry/s50d CARRY_A=.carry/s50a-bench bash bench/kernel/s50-fix.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s50-fix
mkdir -p /tmp/A && tar -C /tmp/A -xJf "${CARRY_A:?}/bins.tar.xz"
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*NaNOutsideTheRequests*:*CudaFused*:*FusedMerge*'
grep -E '^\[  FAILED' "$OUT/tests.log" | head
run_sanitizers 'Shapes/CudaFusedMergeTest*:CudaFusedCascade.NaNOutside*:*CudaFusedCascadeTest*mixed_groups*:*CudaFusedCascadeTest*page32*'
for round in 1 2; do
  for b in A b; do
    bin=/tmp/$b/prefixd_kernel_bench; [ $b = b ] && bin=$B
    timeout 60 $bin -d 128 --heads 32/8 -b 64,256 -p 8192,32768 -s 100,256 --dtype fp16 --no-baseline --no-graph -c 1 \
      --variants PREFIXD_FUSED=1 --csv "$OUT/fused-$b$round.csv" >"$OUT/fused-$b$round.txt" 2>&1
    echo "fused $b round $round rc=$? $(grep 'wrong results' "$OUT/fused-$b$round.txt")"
  done
done
echo "== fused kernel totals (suffix part alone) us: run-1 build | this build, round 1 | round 2"
paste -d, "$OUT"/fused-A1.csv "$OUT"/fused-b1.csv "$OUT"/fused-A2.csv "$OUT"/fused-b2.csv | awk -F, -v n=32 \
  'NR>1 {printf "B%s P%s S%s", $6, $7, $8; for (i = 0; i < 4; ++i) printf " | %6.1f (%5.1f)", $(i*n+16), $(i*n+14); printf "\n"}'
pack_logs
