#!/usr/bin/env bash
# Session 76, run 10 (nvidia-h200): the whole GPU suite with both sanitizers (launch/gpu-check.sh's
# default lists, memcheck then racecheck) on the session's final binaries (run 7's; no kernel
# changed this session), 12 shards; sanitizer limits 170 / 140 s to fit the session's last minutes.
#   CARRY=.carry/s76d bash bench/kernel/sessions/s76-run10.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s76-run10
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=200 PREFIXD_TIMEOUT_MEMCHECK=170 PREFIXD_TIMEOUT_RACECHECK=140 run_whole_suite
pack_logs
