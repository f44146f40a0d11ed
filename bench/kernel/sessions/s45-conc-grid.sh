#!/usr/bin/env bash
# Session 45, run 10 (nvidia-h200): the opt-in concurrent prefix/decode (k = 20, with the default
# decode kernel and with the persistent TMA decode) on the grid's B64 / B256 × P8192 / P32768 × S32 /
# S256 shapes, 32/32 and 32/8, fp16: where it wins, for a planner rule to come.
#   CARRY=.carry/s45d bash bench/kernel/sessions/s45-conc-grid.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s45-conc-grid
C=PREFIXD_CONCURRENT_DECODE_SMS=20
RUN_TIMEOUT=140 run_variants conc-grid "default,$C,$C+PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1" \
  --heads 32/32,32/8 -b 64,256 -p 8192,32768 -s 32,256 --dtype fp16
awk -F, 'NR>1 {printf "%s/%s B%s P%s S%s %-50s %7.1f %7.1f %6.1f %7.1f %s\n",$3,$4,$6,$7,$8,substr($NF,1,50),$13,$14,$15,$16,$31}' \
  "$OUT/conc-grid.csv"
