#!/usr/bin/env bash
# Session 95, run 2, on b907c39's binaries (.carry/s93a; HEAD's kernels): the whole GPU suite and
# both sanitizers (launch/gpu-check.sh on the carried binaries, 12 shards) on the chained
# concurrent step's default, whose last whole-suite run was on an H100 (session 93 run 1); the
# H200's last was session 90 run 2, before the chain.
#   mkdir -p .carry/s93a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T4 > .carry/s93a/bins.tar.xz   # built at b907c39
#   CARRY=.carry/s93a bash bench/kernel/sessions/s95-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s95-run2
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=240 run_whole_suite
pack_logs
