#!/usr/bin/env bash
# Session 50, run 5 (nvidia-h200): the whole GPU suite on the final binaries (HEAD's build; run 3
# ran it on a build that differed only in the fused kernel's suffix warps, run 4 the fused tests
# and both sanitizers on this kernel). No sanitizers: the device time left does not hold them.
#   CARRY=.carry/s50e bash bench/kernel/sessions/s50-last.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s50-last
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=165 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -4
grep -hE "^\[  FAILED  \]" "$OUT"/check/*.log | sort -u | head -10
