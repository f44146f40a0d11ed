#!/usr/bin/env bash
# Session 59, run 8 (nvidia-h200): the merge tests after their set-up moved into shared helpers
# (MergeKernelPlanOptions, MakeCascadeInputs), and the early decode's tests, on the final binaries.
#   CARRY=.carry/s59f bash bench/kernel/s59-tests.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s59-tests
run_gpu_tests 'CudaMergeStates.*:CudaEarlyDecode.*:CudaGraph.EarlyDecode*'
pack_logs
