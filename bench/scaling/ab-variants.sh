#!/usr/bin/env bash
# One call on a multi-GPU kind (NP ranks, default 4): the strong-scaling step of the distributed
# engine issue (P = 262144, B = 128, S = 512, 1 layer, all-to-all) on GPUS (default 1,NP) under
# each variant of VARIANTS, interleaved, REPEATS times (default 2). A variant is NAME or
# NAME:ENV=V[,ENV=V...] (mpirun -x each); BIN_<NAME> unset runs /tmp/s/prefixd_scaling_bench,
# a variant named old* runs /tmp/s/prefixd_scaling_bench_old. Binaries carried as
# $CARRY/scal.tar.xz. Prints each run's rows; the CSVs and logs come back in $OUT/variants.tgz.
#   session 16: CARRY=.carry/s16c VARIANTS="base stream:PREFIXD_DECODE_STREAM=1 free0:PREFIXD_DECODE_FREE_SMS=0"
set -uo pipefail
cd "$(dirname "$0")/../.."
VARIANTS=${VARIANTS:?set VARIANTS to the variants to compare}
OUT=${OUT:-/tmp/ab-variants}
NP=${NP:-4}
. bench/scaling/device-setup.sh
for i in $(seq 1 "${REPEATS:-2}"); do
  for v in $VARIANTS; do
    name=${v%%:*}; envs=(); bin=prefixd_scaling_bench
    [[ $name == old* ]] && bin=prefixd_scaling_bench_old
    if [[ $v == *:* ]]; then IFS=, read -ra kv <<<"${v#*:}"; for e in "${kv[@]}"; do envs+=(-x "$e"); done; fi
    csv="$OUT/v-$name-$i.csv"
    timeout 120 $M ${EXTRA:-} "${envs[@]}" /tmp/s/$bin --mode strong --prefix 262144 --batch 128 --suffix 512 \
      --layers 1 --gpus "${GPUS:-1,$NP}" --reduction a2a --csv "$csv" >"$OUT/v-$name-$i.log" 2>&1
    echo "== $v ($i) rc=$?"; row "$csv"
  done
done
tar -C "$OUT" -czf "$OUT/variants.tgz" $(cd "$OUT" && ls v-*) && rm -f "$OUT"/v-*
