#!/usr/bin/env bash
# Session 101, run 2, on .carry/s101a: the whole GPU suite (8 shards, no sanitizer; run 1 ran both
# sanitizers on these binaries but cut the suite at its 150 s limit).
#   CARRY=.carry/s101a bash bench/kernel/sessions/s101-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s101-run2
PREFIXD_SKIP_SANITIZER=1 PREFIXD_TIMEOUT_TESTS=500 run_whole_suite
echo "elapsed ${SECONDS} s"
pack_logs
