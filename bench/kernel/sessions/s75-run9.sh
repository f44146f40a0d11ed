#!/usr/bin/env bash
# Session 75, run 9 (nvidia-h200): the whole GPU suite with both sanitizers (launch/gpu-check.sh's
# default lists) on the session's final binaries (the long-run merge and the sliced head_dim-256
# decode of groups of 5-8), 12 shards.
#   CARRY=.carry/s75f bash bench/kernel/sessions/s75-run9.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s75-run9
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 PREFIXD_TIMEOUT_MEMCHECK=120 PREFIXD_TIMEOUT_RACECHECK=80 run_whole_suite
pack_logs
