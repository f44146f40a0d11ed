#!/usr/bin/env bash
# Session 40, run 5 (nvidia-h200): the turn's ring stages through WarpUniform at head_dim 64 as well
# (UNIFORM_STAGES = true; sass_config.sh: turn 280 -> ~278 lines). Binaries ($CARRY/bins.tar.xz):
# this build and run 4's kept build as *_old.
#   1. the kernel benchmark, old new old new: the issue's head_dim 64 rows (32/32 and 32/8, B256
#      P32768, S 32 and 256, fp16 and bf16);
#   2. GPU tests: every head_dim 64 case (175).
# Measured slower (+6%, head_dim 64 prefix parts) and reverted: the build needs
# results/s40/d64-stages.patch back to run again.
#   CARRY=.carry/s40d bash bench/kernel/sessions/s40-d64-stages.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s40-d64-stages
run_bench_ab "$OUT" -d 64 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
GPU_TESTS_TIMEOUT=200 run_gpu_tests '*d64*'
grep -hE '^\[  FAILED' "$OUT/tests.log" | head -10
pack_logs
