#!/usr/bin/env bash
# Session 45, run 8 (nvidia-h200): the session's final binaries.
#   1. the concurrent prefix/decode with the stream-balanced prefix grid (PREFIXD_CONCURRENT_DECODE_SMS,
#      opt-in) against the default, 32/32 and 32/8 B256 P32768 S256 at head_dim 128 and 256, fp16
#      and bf16, k = 12 / 20 / 28 (prefix grids of 120 / 112 / 104 CTAs at 32/8), and k = 20 with the
#      persistent TMA decode (head_dim 128 only: at 256 it falls back to the cp.async stream);
#   2. the whole GPU suite (launch/gpu-check.sh, no benchmarks).
#   CARRY=.carry/s45d bash bench/kernel/sessions/s45-final.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s45-final
C=PREFIXD_CONCURRENT_DECODE_SMS
V="default,$C=12,$C=20,$C=28,$C=20+PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1"
RUN_TIMEOUT=200 run_variants conc "$V" -d 128,256 --heads 32/32,32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16
echo "== prefix / suffix / merge / total us, wrong"
awk -F, 'NR>1 {printf "%s %s/%s D%s %-56s %7.1f %7.1f %6.1f %7.1f %s\n",$1,$3,$4,$5,$NF,$13,$14,$15,$16,$31}' "$OUT/conc.csv"
OUT=$OUT/check PREFIXD_BIN_DIR=/tmp/b PREFIXD_SKIP_CPU_TESTS=1 PREFIXD_SKIP_BENCH=1 PREFIXD_TIMEOUT_TESTS=300 \
  bash launch/gpu-check.sh 2>&1 | tail -15
pack_logs
