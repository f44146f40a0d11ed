#!/usr/bin/env bash
# Session 56, run 3 (nvidia-h200): the new random-shape test (CudaCascadeFuzz) with many draws, the
# concurrent / TMA-decode / graph tests beside it (the backend's options changed for
# PREFIXD_CONCURRENT_DECODE_TMA=force), then compute-sanitizer on a few draws.
#   CARRY=.carry/s56c bash bench/kernel/sessions/s56-fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s56-fuzz
PREFIXD_FUZZ_CASES=${FUZZ_CASES:-300} timeout 300 /tmp/b/prefixd_gpu_tests --gtest_filter='CudaCascadeFuzz*' \
  >"$OUT/fuzz.log" 2>&1
echo "fuzz rc=$? $(grep -E '^\[ fuzz|^\[  (PASSED|FAILED)' "$OUT/fuzz.log" | tr '\n' ' ')"
grep -B2 -A12 'Failure' "$OUT/fuzz.log" | head -60
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*Concurrent*:*Tma*:*TmaDecode*:*Graph*:*FreeSms*'
for tool in memcheck racecheck; do
  PREFIXD_FUZZ_CASES=4 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/b/prefixd_gpu_tests \
    --gtest_brief=1 --gtest_filter='CudaCascadeFuzz*' >"$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED|PREFIXD_TEST_SEED' "$OUT/$tool.log" | sort -u | tr '\n' ' ')"
done
pack_logs
