#!/usr/bin/env bash
# Session 73, run 6 (nvidia-h200): the whole GPU suite and both sanitizers on this session's build of
# HEAD (no kernel source changed since session 72's run 4; a fresh build directory on a fresh
# machine), 12 shards.
#   CARRY=.carry/s73d bash bench/kernel/sessions/s73-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s73-run6
PREFIXD_TEST_SHARDS=12 run_whole_suite
pack_logs
