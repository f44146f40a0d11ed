#!/usr/bin/env bash
# Session 97, run 3, on .carry/s97a (e2d8660's binaries), on run 1's warm machine with ~300 s of
# device time left (too little for run 2's whole suite with sanitizers): every GPU test on the
# chained default (PREFIXD_CONCURRENT_CHAIN=all), in 8 gtest shards side by side, no sanitizer.
#   mkdir -p .carry/s97a && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s97a/bins.tar.xz   # built at e2d8660
#   CARRY=.carry/s97a bash bench/kernel/sessions/s97-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s97-run3
SHARD_TIMEOUT=${SHARD_TIMEOUT:-200} run_test_shards '*'
echo "elapsed $SECONDS s"
pack_logs
