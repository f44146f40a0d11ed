#!/usr/bin/env bash
# Session 71, run 8 (nvidia-h200): the whole GPU suite on the final binaries (kernels as session 70's,
# the description string and the test changes of this session), 12 gtest shards side by side, no
# sanitizers (too little device time left; session 70 ran them on the same kernel sources).
#   CARRY=.carry/s71g bash bench/kernel/sessions/s71-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s71-run8
PREFIXD_SKIP_SANITIZER=1 PREFIXD_TIMEOUT_TESTS=230 PREFIXD_TEST_SHARDS=12 run_whole_suite
pack_logs
