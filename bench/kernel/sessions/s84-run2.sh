#!/usr/bin/env bash
# Session 84, run 2 (nvidia-h200, after run 1, same carry): the whole GPU suite on the binary whose
# tests/gpu/cuda_backend_test.cc session 84 split into files by concept (the same 1290 tests), 12
# shards, then compute-sanitizer memcheck and racecheck on launch/gpu-check.sh's default lists;
# each step time-limited so that the call ends inside 600 s (as s82 run 2, 284 s).
#   CARRY=.carry/s84 bash bench/kernel/sessions/s84-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s84-run2
PREFIXD_TEST_SHARDS=12 PREFIXD_TIMEOUT_TESTS=150 PREFIXD_TIMEOUT_MEMCHECK=240 PREFIXD_TIMEOUT_RACECHECK=150 run_whole_suite
pack_logs
