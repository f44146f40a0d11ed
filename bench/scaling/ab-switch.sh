#!/usr/bin/env bash
# One call on a multi-GPU kind (NP ranks, default 4): an A/B of worker/backend switches (environment NAME=0 / NAME=1,
# alternating REPEATS times, for each NAME in SWITCH) on strong scaling at the distributed engine
# issue's configuration (P = 262144, B = 128, S = 512, 1 layer, all-to-all, GPUS), after the
# NCCL/CUDA MPI tests of FILTER at 4 ranks and, with GPU_FILTER, the single-GPU tests of that filter
# (prefixd_gpu_tests and prefixd_unit_tests, when carried). Binaries carried as $CARRY/scal.tar.xz
# (prefixd_scaling_bench, prefixd_mpi_tests; optionally prefixd_gpu_tests, prefixd_unit_tests).
#   session 12 (bench/scaling/results/s12/ab-*): CARRY=.carry/s12c SWITCH=PREFIXD_DECODE_BEHIND_PREFIX
#     FILTER='*behind*cuda*:*sendfirst1*cuda*' REPEATS=2 GPUS=1,4
#   session 13 (bench/scaling/results/s13/): see bench/scaling/README.md, session 13
#   session 14 (bench/scaling/results/s14/): NP=8 GPUS=1,2,4,8 SWITCH=PREFIXD_PEER_EXCHANGE, see the README
# VALUES (default "0 1") are the values compared; EXTRA (e.g. "-x PREFIXD_PEER_STATS=1") goes to mpirun.
set -uo pipefail
cd "$(dirname "$0")/../.."
SWITCH=${SWITCH:?set SWITCH to the environment switch(es) to compare}
OUT=${OUT:-/tmp/ab-switch}
NP=${NP:-4}
. bench/scaling/device-setup.sh
if [ -n "${GPU_FILTER:-}" ]; then
  for t in prefixd_gpu_tests prefixd_unit_tests; do
    [ -x /tmp/s/$t ] || continue
    timeout 200 /tmp/s/$t --gtest_filter="$GPU_FILTER" >"$OUT/$t.log" 2>&1
    echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$OUT/$t.log"
  done
fi
if [ -n "${FILTER:-}" ]; then
  timeout ${MPI_TIMEOUT:-240} $M /tmp/s/prefixd_mpi_tests --gtest_filter="$FILTER" >"$OUT/mpi_np$NP.log" 2>&1
  echo "mpi np$NP rc=$?"; grep -E "test results|FAILED" "$OUT/mpi_np$NP.log" | tail -3
fi
for i in $(seq 1 "${REPEATS:-1}"); do for s in $SWITCH; do for v in ${VALUES:-0 1}; do
  csv="$OUT/strong-$s-$v-$i.csv"
  timeout 120 $M ${EXTRA:-} -x "$s=$v" /tmp/s/prefixd_scaling_bench --mode strong --prefix 262144 --batch 128 --suffix 512 \
    --layers 1 --gpus "${GPUS:-1,2,4}" --reduction a2a --csv "$csv" >/dev/null 2>"$OUT/strong-$s-$v-$i.err"
  echo "== $s=$v ($i) rc=$?"
  awk -F, 'NR>1 && !/^#/{printf "  gpus %s step %s ms exposed %s eff %s err %s\n", $2, $13, $15, $17, $36}' "$csv"
done; done; done
# The CSVs and logs in one archive (the device tool returns at most 8 files).
tar -C "$OUT" -czf "$OUT/strong-csv.tgz" $(cd "$OUT" && ls strong-*.csv strong-*.err) && rm -f "$OUT"/strong-*.csv "$OUT"/strong-*.err
