#!/usr/bin/env bash
# Session 76, run 8 (nvidia-h200): the whole GPU suite (launch/gpu-check.sh, 12 shards, no
# sanitizers: no kernel changed this session, and s75's runs were clean) on the session's final
# binaries (run 7's).
#   CARRY=.carry/s76d bash bench/kernel/sessions/s76-run8.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s76-run8
PREFIXD_SKIP_SANITIZER=1 PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 run_whole_suite
pack_logs
