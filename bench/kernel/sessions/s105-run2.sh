#!/usr/bin/env bash
# Not run: too little device time was left in session 105 to start a machine.
# Session 105, run 2, on .carry/s104c (as s105-run1.sh), for the ~300 s of device time left
# after eleven failed starts: only the merge / 16-bit GPU tests (MergeHalfWarpRowsKernel's among
# them, never yet run on a GPU) and the headline A/B in one process, PREFIXD_MERGE_HALF_WARP=1
# against the default, both orders, fp16 and bf16 (32/8 B256 P32768 S256). Any card.
#   CARRY=.carry/s104c bash bench/kernel/sessions/s105-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s105-run2
GPU_TESTS_TIMEOUT=90 run_gpu_tests 'CudaMergeStates*:CudaConcurrentCascade.HalfWarp*'
RUN_TIMEOUT=50 run_headline_ab PREFIXD_MERGE_HALF_WARP=1
echo "elapsed ${SECONDS} s"
pack_logs
