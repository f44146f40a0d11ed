#!/usr/bin/env bash
# Session 56, run 7 (nvidia-h200): after the review — the concurrent switch's test (now also
# PREFIXD_CONCURRENT_DECODE_TMA=force and a bad value), the random-shape test with its pick helper
# shared, and the concurrent / TMA-decode tests beside them.
#   CARRY=.carry/s56e bash bench/kernel/sessions/s56-review.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s56-review
GPU_TESTS_TIMEOUT=250 run_gpu_tests '*CudaConcurrent*:*CudaCascadeFuzz*:*TmaDecode*'
grep -h '^\[ fuzz' "$OUT/tests.log"
pack_logs
