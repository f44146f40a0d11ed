#!/usr/bin/env bash
# Session 59, runs 8-9 (nvidia-h200): the merge tests after their set-up moved into shared helpers
# (MergeKernelPlanOptions, MakeCascadeInputs), and the early decode's tests (run 9: on the final binaries,
# its steps counted only beside the prefix grid).
#   CARRY=.carry/s59g bash bench/kernel/sessions/s59-tests.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s59-tests
run_gpu_tests 'CudaMergeStates.*:CudaEarlyDecode.*:CudaGraph.EarlyDecode*'
pack_logs
