#!/usr/bin/env bash
# Session 67, run 3 (nvidia-h200): the whole GPU suite (launch/gpu-check.sh: every GPU test in 8
# shards, memcheck and racecheck on its default lists) on the final binaries, with the merge of
# runs of 5-8 states in one latency (MergeShortRunsKernel<1, 8>).
#   CARRY=.carry/s67c bash bench/kernel/sessions/s67-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s67-run3
run_whole_suite
pack_logs
