#!/usr/bin/env bash
# Session 65, run 2 (nvidia-h200): the whole GPU suite (8 shards, gpu-check's sanitizer lists) on
# the binaries with the CTA pairs removed (commit 569752b), whose default prefix kernel is
# that of session 63's grid again.
#   CARRY=.carry/s65b bash bench/kernel/sessions/s65-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s65-run2
run_whole_suite
pack_logs
