#!/usr/bin/env bash
# One short nvidia-h200-x8 call (the eight-GPU issue), in priority order within a small device
# budget: strong scaling at P = 262144 (B = 128, S = 512, 1 layer, both reductions) on 1, 2, 4 and
# 8 GPUs, every N-GPU row checked against the 1-GPU outputs; weak scaling at 131072 prefix tokens
# per GPU; strong scaling at P = 1048576 (1 layer, all-to-all). Binaries carried as
# $CARRY/scal.tar.xz (prefixd_scaling_bench, prefixd_mpi_tests).
#   session 12 (bench/scaling/results/s12/x8/): CARRY=.carry/s12c
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/x8-sample}
NP=8
. bench/scaling/device-setup.sh
B="/tmp/s/prefixd_scaling_bench --batch 128 --suffix 512 --layers 1"
nvidia-smi -L | wc -l
timeout 75 $M $B --mode strong --prefix 262144 --gpus 1,2,4,8 --reduction both --csv "$OUT/strong-262k.csv" >"$OUT/strong-262k.log" 2>&1
echo "strong 262144 rc=$?"; row "$OUT/strong-262k.csv"
timeout 45 $M $B --mode weak --prefix-per-gpu 131072 --gpus 1,2,4,8 --csv "$OUT/weak.csv" >"$OUT/weak.log" 2>&1
echo "weak rc=$?"; row "$OUT/weak.csv"
timeout 45 $M $B --mode strong --prefix 1048576 --gpus 1,2,4,8 --reduction a2a --csv "$OUT/strong-1m.csv" >"$OUT/strong-1m.log" 2>&1
echo "strong 1048576 rc=$?"; row "$OUT/strong-1m.csv"
