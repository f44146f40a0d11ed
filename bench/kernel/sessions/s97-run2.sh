#!/usr/bin/env bash
# Session 97, run 2, on .carry/s97a (e2d8660's binaries): the whole GPU suite and both sanitizers'
# default lists (launch/gpu-check.sh on the carried binaries) on the default that 588cdf8 made
# (PREFIXD_CONCURRENT_CHAIN=all), its first whole run without the setting in the environment (s96
# run 4 had it set by hand and found four tests of the two-stream form to mend).
#   mkdir -p .carry/s97a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s97a/bins.tar.xz   # built at e2d8660
#   CARRY=.carry/s97a bash bench/kernel/sessions/s97-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s97-run2
PREFIXD_TIMEOUT_TESTS=280 run_whole_suite
grep -h -E '^\[  FAILED  \] [A-Za-z]' "$OUT"/check/*.log | sed 's/ (.*//' | sort -u
echo "elapsed $SECONDS s"
pack_logs
