#!/usr/bin/env bash
# Session 60, run 10 (nvidia-h200): the two balanced-grid GPU tests after their plan options moved
# into one helper (BalancedGridOptions; same options, same assertions).
#   CARRY=.carry/s60h bash bench/kernel/sessions/s60-run10.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s60-run10
run_gpu_tests 'CudaCascade.BalancedPrefixGridMatchesTheOracle:CudaMergeStates.SkippedEmptyStatesGiveTheBitsOfLoadedOnes'
pack_logs
