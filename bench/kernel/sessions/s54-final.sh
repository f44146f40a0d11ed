#!/usr/bin/env bash
# Session 54, run 8 (nvidia-h200): the whole GPU suite (8 shards) on the session's final binaries
# (kernels as 43ab99e's; the graph test now instantiates with the captured priorities and checks
# them), no sanitizers (the kernels are those session 53's run 2 checked), no benchmark.
#   CARRY=.carry/s54g bash bench/kernel/sessions/s54-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-final
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_SKIP_SANITIZER=1 \
  PREFIXD_TIMEOUT_TESTS=300 PREFIXD_TEST_SHARDS=8 bash launch/gpu-check.sh 2>&1 | tail -8
pack_logs
