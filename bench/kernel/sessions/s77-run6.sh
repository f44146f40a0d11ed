#!/usr/bin/env bash
# Session 77, run 6 (nvidia-h200), the final binaries (run 5's):
#   1. the single-step decode rule end to end: the distributed step on one GPU (prefixd_scaling_bench,
#      strong, P 262144, B 128, 32/8, bf16, 32 layers) at suffixes of 16 and 24 tokens (under the
#      rule) and 32 (outside it), the default against PREFIXD_DECODE_PIPELINE=shallow (as before),
#      twice each;
#   2. the issue's grid (issue4-grid.sh: since this session with the measured choice).
#   CARRY=.carry/s77c bash bench/kernel/sessions/s77-run6.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run6
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
S=/tmp/b/prefixd_scaling_bench
for round in 1 2; do for sfx in 16 24 32; do for pipe in auto shallow; do
  name=serve-s$sfx-$pipe-$round
  PREFIXD_DECODE_PIPELINE=$pipe timeout 100 mpirun --allow-run-as-root -np 1 $S --mode strong --gpus 1 --layers 32 \
    --suffix $sfx -n 20 -w 3 --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? step_ms $(tail -n +2 "$OUT/$name.csv" | head -1 | cut -d, -f13-15) $(grep -o 'check: .*' "$OUT/$name.txt")"
done; done; done
OUT=$OUT/grid bash bench/kernel/issue4-grid.sh 2>&1 | tail -14
pack_logs
