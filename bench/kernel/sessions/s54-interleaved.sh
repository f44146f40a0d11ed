#!/usr/bin/env bash
# Session 54, run 7 (nvidia-h200): the step and its CUDA-graph replay timed interleaved
# (TimeOnStreamInterleaved; run 6's trace: the head_dim-256 prefix kernel slows 2.5% over the run,
# so the replay, timed after the step, read slower). The head_dim 64 / 128 / 256 rows at B256
# P32768 S256 and 32/8 D128 B256 P8192 S256, fp16 and bf16, in four processes: graph − step, µs.
#   CARRY=.carry/s54f bash bench/kernel/sessions/s54-interleaved.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s54-interleaved
for i in 1 2 3 4; do
  for d in 256 64 128; do
    p=32768; [ $d = 128 ] && p=8192,32768
    timeout 100 $B -d $d --heads 32/8,32/32 -b 256 -p $p -s 256 --dtype fp16,bf16 --no-baseline -c 1 \
      --csv "$OUT/p$i-d$d.csv" >"$OUT/p$i-d$d.txt" 2>&1
    echo "p$i d$d rc=$? $(grep 'wrong results' "$OUT/p$i-d$d.txt")"
  done
done
echo "== dtype heads D P: step / graph − step (µs), four processes"
for d in 64 128 256; do
  paste -d, "$OUT"/p1-d$d.csv "$OUT"/p2-d$d.csv "$OUT"/p3-d$d.csv "$OUT"/p4-d$d.csv | awk -F, -v n=32 'NR>1 {
    printf "%s %s/%s D%s P%s", $1, $3, $4, $5, $7;
    for (i = 0; i < 4; ++i) printf " | %6.1f %+5.1f", $(i*n+16), $(i*n+17) - $(i*n+16); printf "\n"}'
done
pack_logs
