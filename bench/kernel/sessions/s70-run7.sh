#!/usr/bin/env bash
# Session 70, run 7 (nvidia-h200): after the review's clean-up (the TMA decode's launch and the plain
# reads' PDL pair through LaunchMaybeProgrammatic, behaviour unchanged): the GPU tests of every TMA
# decode path (sequential, early, concurrent on its k SMs, on free SMs, NaN outside the requests),
# then one grid row with --read-floor, whose start checks every plain-read form byte for byte.
#   CARRY=.carry/s70d bash bench/kernel/sessions/s70-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s70-run7
GPU_TESTS_TIMEOUT=300 run_gpu_tests '*SequentialTmaDecode*:*CudaEarlyDecode.Matches*:*ThePlansTmaDecodeRunsOnTheKSms*:*CudaDecodeOnFreeSms*tma1_swapab1_warps12_k36*:*NaNOutsideTheRequests*'
timeout 120 $B --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16 --read-floor --no-baseline -c 1 >"$OUT/row.txt" 2>&1
echo "row rc=$?"; grep -E 'read floors|fp16 +16 +32/8' "$OUT/row.txt" | cut -c1-200
pack_logs
