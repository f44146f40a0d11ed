#!/usr/bin/env bash
# Session 79, run 3 (nvidia-h200; for a next session, after run 2, same carry): the whole GPU suite
# on the final binaries, 12 shards, then compute-sanitizer memcheck and racecheck on
# launch/gpu-check.sh's default lists (memcheck's now with the item-pages tests); each step
# time-limited so that the call ends inside its 600 s.
#   CARRY=.carry/s79a bash bench/kernel/sessions/s79-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s79-run3
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=150 PREFIXD_TIMEOUT_MEMCHECK=240 PREFIXD_TIMEOUT_RACECHECK=150 run_whole_suite
pack_logs
