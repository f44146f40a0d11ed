#!/usr/bin/env bash
# Session 77, run 1 (nvidia-h200): the grid's step as the worker plans it on CUDA, and the measured
# choice in a 32-layer serving step.
#   1. the issue's grid and head_dim rows twice in one call: with the model's plan (the default, as
#      every grid since s12) and with --measured-choice (kernels::MeasuredPlanner, the worker's
#      default on CUDA since s76), each against the issue's fused floor;
#   2. the distributed step on one GPU (prefixd_scaling_bench, strong, P 262144, B 128, S 512, 32/8,
#      bf16, 32 layers) with the measured choice off / on, twice each (s76 timed 1 layer only);
#   3. the engine's tests on this GPU with NCCL (1 rank).
#   CARRY=.carry/s77a bash bench/kernel/sessions/s77-run1.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s77-run1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
grid() {  # grid NAME EXTRA_ARGS...: the grid and the head_dim rows, as issue4-grid.sh, with EXTRA_ARGS
  local name=$1; shift
  timeout 220 $B --heads 32/32,32/8 -b 16,64,256 -p 1024,8192,32768 -s 32,256 --dtype fp16,bf16 --no-baseline -c 1 \
    --read-floor "$@" --csv "$OUT/$name-grid.csv" >"$OUT/$name-grid.txt" 2>&1
  echo "$name grid rc=$? $(grep 'wrong results' "$OUT/$name-grid.txt")"
  timeout 100 $B --heads 32/32,32/8 -b 256 -p 32768 -s 256 --head-dim 64,256 --dtype fp16,bf16 --no-baseline -c 1 \
    --read-floor "$@" --csv "$OUT/$name-dims.csv" >"$OUT/$name-dims.txt" 2>&1
  echo "$name dims rc=$? $(grep 'wrong results' "$OUT/$name-dims.txt")"
  for t in grid dims; do
    python3 bench/kernel/fused_floor_table.py "$OUT/$name-$t.csv" --log "$OUT/$name-$t.txt" >"$OUT/$name-$t-floor.md" 2>&1
    echo "== $name $t: $(grep -E 'shapes within the bar' "$OUT/$name-$t-floor.md")"
  done
}
grid model
grid measured --measured-choice
grep -o 'measured-choice([^)]*)' "$OUT/measured-grid.txt" "$OUT/measured-dims.txt" | sort | uniq -c | sort -rn | head -20
S=/tmp/b/prefixd_scaling_bench
for round in 1 2; do for mc in 0 1; do
  name=scaling32-mc$mc-$round
  PREFIXD_MEASURED_CHOICE=$mc timeout 150 mpirun --allow-run-as-root -np 1 $S --mode strong --gpus 1 --layers 32 \
    -n 20 -w 3 --csv "$OUT/$name.csv" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(tail -n +2 "$OUT/$name.csv" | head -1 | cut -c1-200)"
done; done
head -1 "$OUT/scaling32-mc0-1.csv"
timeout 200 mpirun --allow-run-as-root --oversubscribe -np 1 /tmp/b/prefixd_mpi_tests --gtest_brief=1 \
  --gtest_filter='*cuda*' >"$OUT/mpi.log" 2>&1
echo "mpi engine (cuda, np 1) rc=$? $(grep -aE 'MPI.*test results|PASSED|FAILED' "$OUT/mpi.log" | head -3 | tr '\n' ' ')"
pack_logs
