#!/usr/bin/env bash
# Session 61, run 8 (nvidia-h200): the TMA decode's launcher without the unreachable heads-as-M
# instantiations at GQA 1 and 2 (if constexpr; the GQA 4/8 paths unchanged): the TMA decode's
# tests in every form (swap-AB on and off, 8 and 12 warps, concurrent, early, persistent).
#   CARRY=.carry/s61g bash bench/kernel/sessions/s61-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s61-run8
GPU_TESTS_TIMEOUT=150 run_gpu_tests 'CudaConcurrentCascade.ThePlansTmaDecodeRunsOnTheKSms:CudaEarlyDecode.*:Variants/CudaDecodeVariantTest.*:Forms/CudaDecodeOnFreeSmsTest.*:CudaCascade.SequentialTma*'
pack_logs
