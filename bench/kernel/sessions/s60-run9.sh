#!/usr/bin/env bash
# Session 60, run 9 (nvidia-h200): the final binaries (run 8's merge: the empty states' v loads
# skipped, the row's KV-head bits once per row): every GPU test that runs the merge kernel, then the
# issue's grid and head_dim rows.
#   CARRY=.carry/s60g bash bench/kernel/sessions/s60-run9.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run9
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*Merge*:CudaConcurrent*:CudaCascade.Balanced*:CudaGraph.*:*Fused*'
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/grid/grid.txt" "$OUT/grid/dims.txt" | sort | uniq -c
pack_logs
