#!/usr/bin/env bash
# Session 99's device calls 2, 3 and 5, run as inline commands on a warm machine (the device tool's
# command line), kept here verbatim so that the figures bench/RESULTS.md quotes from them
# (bench/kernel/results/s99/call2.tgz, call3.tgz, call5.tgz) have their command lines in the repo.
# Calls 2 and 3 ran on .carry/s99a (as s99-run1.sh, call 1), call 5 on .carry/s99b (as s99-run2.sh,
# call 4). Their logs' tags (s99-run2, s99-run3) are the setup tags below, not those scripts'.
#   bash bench/kernel/sessions/s99-inline-calls.sh 2|3|5
set -uo pipefail
cd "$(dirname "$0")/../../.."
case "${1:?call 2, 3 or 5}" in
  2)
    export CARRY=.carry/s99a; source bench/kernel/device-setup.sh s99-run2
    run_bench_ab "$OUT/ab2" --heads 32/8 -d 64,128 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline \
      --no-graph -c 1
    RUN_TIMEOUT=200 run_variants s16b "default,PREFIXD_CONCURRENT_STATES16=1,default,PREFIXD_CONCURRENT_STATES16=1" \
      --heads 32/8 -b 64,128,256 -p 8192,32768 -s 256 --dtype fp16,bf16
    SHOW_LINES=16 show_variants s16b ;;
  3)
    export CARRY=.carry/s99a; source bench/kernel/device-setup.sh s99-run3
    run_bench_ab "$OUT/ab3" --heads 32/8 -b 128,256 -p 32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1
    RUN_TIMEOUT=200 run_variants s16c "default,PREFIXD_CONCURRENT_STATES16=1,default,PREFIXD_CONCURRENT_STATES16=1" \
      --heads 32/8,32/32 -b 96,128,192,256 -p 16384,32768 -s 32,256 --dtype fp16
    SHOW_LINES=20 show_variants s16c
    show_parts s16c | head -70 ;;
  5)
    export CARRY=.carry/s99b; source bench/kernel/device-setup.sh s99-run3
    run_bench_ab "$OUT/ab" --heads 32/8 -d 64,128 -b 128,256 -p 8192,32768 -s 256 --dtype fp16,bf16 --no-baseline \
      --no-graph -c 1
    for f in old1 new1 old2 new2; do
      awk -F, -v f=$f 'NR>1{printf "%s %s D%s B%s P%s merge %s total %s\n", f,$1,$5,$6,$7,$15,$16}' "$OUT/ab/$f.csv"
    done | sort -k2,5 | head -64 ;;
esac
echo "elapsed $SECONDS s"
pack_logs
