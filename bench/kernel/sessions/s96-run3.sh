#!/usr/bin/env bash
# Session 96, run 3, on .carry/s96c (a5a65d4): the one-item chain's A/B again with
# PREFIXD_CONCURRENT_CHAIN=all timed first, twice (32/8 D256 B256 P32768 S256 / S512, fp16 and
# bf16), and the 32/32 and 32/16 head_dim-128 rows with both settings (no concurrent plan there).
# Run in session 96 as one command typed in the call, with OUT=/tmp/r3 set by hand (so its logs
# stayed on the machine); here $OUT is the device's.
#   CARRY=.carry/s96c bash bench/kernel/sessions/s96-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s96-run3
for i in 1 2; do
  RUN_TIMEOUT=100 run_variants d256-rev-$i "PREFIXD_CONCURRENT_CHAIN=all,default" --heads 32/8 -d 256 -b 256 -p 32768 \
    -s 256,512 --dtype fp16,bf16
  SHOW_LINES=8 show_variants d256-rev-$i
done
RUN_TIMEOUT=150 run_variants gqa12 "default,PREFIXD_CONCURRENT_CHAIN=all" --heads 32/32,32/16 -b 64,256 -p 8192,32768 \
  -s 32,256 --dtype fp16
SHOW_LINES=20 show_variants gqa12
grep -o "concurrent(k=[0-9]*[^)]*)" "$OUT/gqa12.txt" | sort | uniq -c
echo "elapsed $SECONDS s"
pack_logs
