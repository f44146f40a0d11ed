#!/usr/bin/env bash
# Session 45, runs 3-5 (nvidia-h200), the command lines as run (run 2 was run 3 without CARRY set:
# it stopped at once). PART=3|4|5.
#   3: the CUDA-graph replay of the head_dim-256 rows, three times (run 1 had it up to 19 µs above
#      the stream's step);
#   4: the same with the PDL and warm-up switches, twice;
#   5: the decode on k SMs beside a capped prefix (the concurrent mode before its prefix grid was
#      balanced: 64 pairs on 112 CTAs), 32/8 B256 P32768 S256.
#   CARRY=.carry/s45a PART=3 bash bench/kernel/sessions/s45-adhoc.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh "s45-adhoc-${PART:?3, 4 or 5}" >/dev/null
case $PART in
  3)
    for r in 1 2 3; do
      timeout 100 $B -d 256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16 --no-baseline -c 1 >$OUT/d256-$r.txt 2>&1
      grep -E "GEMM [0-9]" $OUT/d256-$r.txt | cut -c1-60
      grep -E "^ +fp16" $OUT/d256-$r.txt | awk -F'|' '{print $1 $2}' | cut -c1-130
    done ;;
  4)
    for r in 1 2; do
      timeout 200 $B -d 256 --heads 32/32,32/8 -b 256 -p 32768 -s 32,256 --dtype fp16 --no-baseline -c 1 \
        --variants default,PREFIXD_DECODE_PDL=0,PREFIXD_PREFIX_PDL_TRIGGER=0,PREFIXD_DECODE_WARMUP=0 --csv $OUT/v-$r.csv >$OUT/v-$r.txt 2>&1
      echo "rc=$?"
      awk -F, 'NR>1{printf "%s/%s S%s total %.1f graph %.1f %s\n",$3,$4,$8,$16,$17,$NF}' $OUT/v-$r.csv
    done ;;
  5)
    V=default
    for k in 20 36; do
      V="$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_DECODE_PERSISTENT=1,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_DECODE_PERSISTENT=1+PREFIXD_DECODE_TMA=1"
    done
    timeout 300 $B --heads 32/8 -b 256 -p 32768 -s 256 --dtype fp16,bf16 --no-baseline --no-graph -c 1 --variants $V \
      --csv $OUT/ksm.csv >$OUT/ksm.txt 2>&1
    echo rc=$?
    awk -F, 'NR>1{printf "%s pfx %.1f sfx %.1f total %.1f wrong %s %s\n",$1,$13,$14,$16,$31,$NF}' $OUT/ksm.csv ;;
esac
