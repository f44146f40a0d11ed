#!/usr/bin/env bash
# Session 60, run 3 (nvidia-h200): the issue's grid and head_dim rows with the prefix stream's
# narrow slots and the TMA-decode mode's k = 14 / 16 as defaults (commit ddcb393), then the
# concurrent mode's, the balanced grids' and the TMA decode's GPU tests, and compute-sanitizer on
# the narrow-slot oracle test and the planner's concurrent test.
#   CARRY=.carry/s60c bash bench/kernel/sessions/s60-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run3
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/grid/grid.txt" "$OUT/grid/dims.txt" | sort | uniq -c
GPU_TESTS_TIMEOUT=240 run_gpu_tests 'CudaConcurrent*:CudaCascade.BalancedPrefixGridMatchesTheOracle:*TmaDecode*:CudaGraph.*:CudaMergeStates*'
run_sanitizers 'CudaCascade.BalancedPrefixGridMatchesTheOracle:CudaConcurrentCascade.ThePlannersChoiceRunsConcurrently'
pack_logs
