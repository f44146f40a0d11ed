#!/usr/bin/env bash
# Session 58, run 3 (nvidia-h200): the cascade test of plans that take head_dim 128's long tile
# (its plan options fixed after run 2, where the balancer's tails had made the plan's tile 128; and
# the CUDA backend now reads the planner's settings once, at construction),
# then the issue's grid and head_dim rows on these binaries (issue4-grid.sh).
#   CARRY=.carry/s58c bash bench/kernel/sessions/s58-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s58-grid
run_gpu_tests '*HeadDim128LongTile*:*UnknownKvTile*:*MalformedPlanner*:CudaCascade.*:CudaConcurrentCascade.*'
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
pack_logs
