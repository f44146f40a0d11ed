#!/usr/bin/env bash
# A session's closing device call (nvidia-h200), final binaries: the whole GPU suite and
# compute-sanitizer (bench/kernel/device-check.sh), then the issue's grid (fp16 and bf16, with the
# CUDA-graph replay), the head_dim 64/256 rows and the planner check (bench/kernel/sessions/s17-grid.sh).
# Binaries carried as $CARRY/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench).
# Hands back the tables and one tarball of every log ($OUT/all.tar.xz).
#   session 19 run 6 (then named s19-final.sh): CARRY=.carry/s19d
#   session 20 run 5: CARRY=.carry/s20d
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-/tmp/final-check}
mkdir -p "$FINAL"
OUT=/tmp/final-work/check bash bench/kernel/device-check.sh
OUT=/tmp/final-work/grid VARIANTS=default PLANNER_ENVS=- bash bench/kernel/sessions/s17-grid.sh
cp /tmp/final-work/grid/grid-default-floor.md /tmp/final-work/grid/dims-floor.md "$FINAL/" 2>/dev/null
tar -C /tmp/final-work -cJf "$FINAL/all.tar.xz" .
