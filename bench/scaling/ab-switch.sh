#!/usr/bin/env bash
# One nvidia-h200-x4 call: an A/B of one worker switch (environment NAME=0 / NAME=1, alternating
# REPEATS times) on strong scaling at the distributed engine issue's configuration (P = 262144,
# B = 128, S = 512, 1 layer, all-to-all, GPUS), after the NCCL/CUDA MPI tests of FILTER at 4 ranks.
# Binaries carried as $CARRY/scal.tar.xz (prefixd_scaling_bench, prefixd_mpi_tests).
#   session 12 (bench/scaling/results/s12/ab-*): CARRY=.carry/s12c SWITCH=PREFIXD_DECODE_BEHIND_PREFIX
#     FILTER='*behind*cuda*:*sendfirst1*cuda*' REPEATS=2 GPUS=1,4
set -uo pipefail
cd "$(dirname "$0")/../.."
SWITCH=${SWITCH:?set SWITCH to the environment switch to compare}
OUT=${OUT:-/tmp/ab-switch}
NP=4
. bench/scaling/device-setup.sh
if [ -n "${FILTER:-}" ]; then
  timeout 200 $M /tmp/s/prefixd_mpi_tests --gtest_filter="$FILTER" >"$OUT/mpi_np4.log" 2>&1
  echo "mpi np4 rc=$?"; grep -E "test results" "$OUT/mpi_np4.log" | tail -1
fi
for i in $(seq 1 "${REPEATS:-1}"); do for v in 0 1; do
  timeout 120 $M -x "$SWITCH=$v" /tmp/s/prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 --suffix 512 \
    --layers 1 --gpus "${GPUS:-1,2,4}" --reduction a2a --csv "$OUT/strong-$v-$i.csv" >"$OUT/strong-$v-$i.log" 2>&1
  echo "== $SWITCH=$v ($i) rc=$?"
  awk -F, 'NR>1 && !/^#/{printf "  gpus %s step %s ms exposed %s eff %s err %s\n", $2, $13, $15, $17, $36}' "$OUT/strong-$v-$i.csv"
done; done
