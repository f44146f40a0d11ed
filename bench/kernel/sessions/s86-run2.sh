#!/usr/bin/env bash
# Session 86, run 2 (nvidia-h200 asked): the whole GPU suite (launch/gpu-check.sh, 12 shards, its
# memcheck and racecheck lists) on the build that run 1 kept (BUILD=spec: this tree; BUILD=early:
# this tree with the early-wait patch), each step time-limited so that the call ends inside 600 s.
# Carry: .carry/s86 (s86-run1.sh's header).
#   BUILD=spec CARRY=.carry/s86 bash bench/kernel/sessions/s86-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s86-run2
cp "/tmp/b/prefixd_kernel_bench_${BUILD:?spec or early}" /tmp/b/prefixd_kernel_bench
cp "/tmp/b/prefixd_gpu_tests_$BUILD" /tmp/b/prefixd_gpu_tests
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=150 PREFIXD_TIMEOUT_MEMCHECK=200 PREFIXD_TIMEOUT_RACECHECK=120 \
  run_whole_suite
pack_logs
