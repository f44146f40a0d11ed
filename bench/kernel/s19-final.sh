#!/usr/bin/env bash
# Session 19's closing device call (nvidia-h200), final binaries: the whole GPU suite and
# compute-sanitizer (bench/kernel/device-check.sh), then the issue's grid (fp16 and bf16, with the
# CUDA-graph replay), the head_dim 64/256 rows and the planner check (bench/kernel/s17-grid.sh).
# Binaries carried as $CARRY/bins.tar.xz (prefixd_gpu_tests, prefixd_kernel_bench).
# Hands back the tables and one tarball of every log ($OUT/all.tar.xz).
#   run 6: CARRY=.carry/s19d
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-/tmp/s19-final}
mkdir -p "$FINAL"
OUT=/tmp/s19-work/check bash bench/kernel/device-check.sh
OUT=/tmp/s19-work/grid VARIANTS=default PLANNER_ENVS=- bash bench/kernel/s17-grid.sh
cp /tmp/s19-work/grid/grid-default-floor.md /tmp/s19-work/grid/dims-floor.md "$FINAL/" 2>/dev/null
tar -C /tmp/s19-work -cJf "$FINAL/all.tar.xz" .
