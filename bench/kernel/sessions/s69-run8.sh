#!/usr/bin/env bash
# Session 69, run 8 (nvidia-h200): the one-warp CTA's tests again after the rule test gained its
# check that the default threshold's batch has ≥ 8192 items.
#   CARRY=.carry/s69g bash bench/kernel/sessions/s69-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s69-run8
GPU_TESTS_TIMEOUT=150 run_gpu_tests '*DecodeWarp*:*DecodePipelineTest*warp*'
pack_logs
