#!/usr/bin/env bash
# Session 27, device calls on nvidia-h200: the wgmma prefix kernel at head_dim 256 (64-token K/V
# tiles, m64n256 P·V), where the mma.sync kernel ran at ~36% of the GEMM rate and the issue's
# head_dim rows missed their bar. Binaries carried as $CARRY/bins.tar.xz.
# Runs are the session's device calls (logs: bench/kernel/results/s27/runN-*):
#   run 1: CARRY=.carry/s27a PART=1   (the prefix-kernel GPU tests, memcheck and racecheck on the
#                                      head_dim 256 wgmma cases, then the head_dim 256 rows against
#                                      the mma.sync kernel and the plain schedule)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s27-d256
if [ "${PART:-1}" = 1 ]; then
  run_gpu_tests '*PrefixAttention*'
  grep -E "FAILED|Failure" "$OUT/tests.log" | head -20
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/b/prefixd_gpu_tests --gtest_brief=1 \
      --gtest_filter='*wgmma_ManyItems_d256_fp16*:*wgmma_PoisonShortPrefix_d256_bf16*:*wgmma_plain_PoisonGroups_page7_d256_fp16*' \
      >"$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED' "$OUT/$tool.log" | tr '\n' ' ')"
  done
  run_variants d256 "default,plain,mma-prefix" -d 256 --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 256 --dtype fp16,bf16
  run_variants d128 "default" --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16
  show_variants d256 d128
  grep -E "^ +(fp16|bf16)" "$OUT/d256.txt" | head -40
  exit 0
fi
