#!/usr/bin/env bash
# Session 76, run 7 (nvidia-h200): run 3's serving-path A/B again after the fix it led to. Run 3
# found steps of 15-19 ms with the measured choice and fresh plans (0.85 ms without); runs 4-6
# (diagnostics, .carry/dbg scripts, not kept) traced it to the host: the layout choice's report
# planned plain decode of the 262144-token prefix for 128 requests (26 ms) at every plan. Now it
# does not where the plan's lower bound already loses.
#   1. the distributed step on one GPU (prefixd_scaling_bench, strong, P 262144, B 128, S 512, 32/8,
#      bf16, 1 layer) with the measured choice off / on, twice each, steady and fresh plans;
#   2. the planner's GPU tests and the engine tests on this GPU with NCCL on these final binaries.
#   CARRY=.carry/s76d bash bench/kernel/sessions/s76-run7.sh
set -uo pipefail
# The same calls as run 3 (its logs then carry run 3's tag).
exec bash "$(dirname "$0")/s76-run3.sh"
