#!/usr/bin/env bash
# Session 96, run 4, on .carry/s96c (a5a65d4): the whole GPU suite and both sanitizers'
# default lists (launch/gpu-check.sh on the carried binaries) with PREFIXD_CONCURRENT_CHAIN=all in
# the environment, i.e. as the default it became in 588cdf8. Run in session 96 as one command typed
# in the call, with OUT=/tmp/r4 set by hand (its logs stayed on the machine; two more calls read
# the failures there); here $OUT is the device's.
#   CARRY=.carry/s96c bash bench/kernel/sessions/s96-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s96-run4
export PREFIXD_CONCURRENT_CHAIN=all
PREFIXD_TIMEOUT_TESTS=280 run_whole_suite
grep -h -E '^\[  FAILED  \] [A-Za-z]' "$OUT"/check/*.log | sed 's/ (.*//' | sort -u
echo "elapsed $SECONDS s"
pack_logs
