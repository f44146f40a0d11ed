#!/usr/bin/env bash
# Session 68, run 2 (nvidia-h200): why the GQA-4 decode streams slower than the GQA-1 decode over
# items of the same size. The suffix part alone against a plain read of the step's bytes
# (--read-floor), S = 256, P = 1024, B 64 / 256, heads 32/8 (GQA 4) and 32/32 (GQA 1), with every
# decode setting that changes its kernel, under the issue's flush (write) and a clean one.
#   CARRY=.carry/s68a bash bench/kernel/sessions/s68-run2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s68-run2
for f in write clean; do
  RUN_TIMEOUT=150 run_variants "dec-$f" "default,tma,persistent,w1,w4" --heads 32/8,32/32 -b 64,256 -p 1024 -s 256 \
    --read-floor --flush $f
done
for f in write clean; do
  echo "== flush $f: dtype heads D B P S variant | prefix suffix merge total | read floor (note)"
  awk -F, 'NR>1 {printf "%s %s/%s D%s B%s P%s S%s %-12s %7.1f %7.1f %6.1f %7.1f | %6.1f\n",$1,$3,$4,$5,$6,$7,$8,$NF,$13,$14,$15,$16,$32}' "$OUT/dec-$f.csv"
done
pack_logs
