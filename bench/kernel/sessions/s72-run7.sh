#!/usr/bin/env bash
# Session 72, run 7 (nvidia-h200): the backend description's "[warp CTA rule: from 1 item]" (was
# "from 1 items"): its GPU test, and the backend and cascade tests that read the description.
#   CARRY=.carry/s72f bash bench/kernel/sessions/s72-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s72-run7
run_gpu_tests 'DecodeWarpRule.*:DecodeWarpRounds.*:CudaBackendInfo.*:CudaBackend.*:CudaCascade.*'
pack_logs
