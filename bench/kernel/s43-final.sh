#!/usr/bin/env bash
# Session 43, run 8 (nvidia-h200): the whole GPU suite on the session's last binaries (commit
# 7d123fa: the K/V tile length in one place, PrefixKvTileTokens; device code as run 1's).
#   CARRY=.carry/s43d bash bench/kernel/s43-final.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/kernel/device-setup.sh s43-final
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh | tail -8
pack_logs
