#!/usr/bin/env bash
# Session 61, run 7 (nvidia-h200): the two new GPU tests after their shared set-up moved into one
# helper (MakeUnsplitCascade; behaviour unchanged).
#   CARRY=.carry/s61f bash bench/kernel/sessions/s61-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run7
run_gpu_tests 'CudaEarlyDecode.AutoShareWhereTheRuleTakesIt:CudaCascade.SequentialTmaDecodeWhereTheRuleTakesIt'
pack_logs
