#!/usr/bin/env bash
# Session 55, run 7 (nvidia-h200): the SM clock beside each synthetic load (the beside kernel's
# clock64 over %globaltimer; the clock is the chip's, so it is the prefix kernel's too) at the
# concurrent plans of 32/8 D128 B256 P8192 and P32768 S256 (fp16, two processes), and nvidia-smi's
# power, clock and throttle reasons sampled every 20 ms meanwhile.
#   CARRY=.carry/s55d bash bench/kernel/sessions/s55-clock.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s55-clock
nvidia-smi --query-gpu=timestamp,power.draw,power.limit,clocks.sm,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 20 >"$OUT/smi.csv" 2>&1 &
smi=$!
for i in 1 2; do
  timeout 150 $B -d 128 --heads 32/8 -b 256 -p 8192,32768 -s 256 --dtype fp16 --no-baseline --no-graph -c 1 -n 200 \
    --beside none,spin,fma,dram,l2 --csv "$OUT/clock$i.csv" >"$OUT/clock$i.txt" 2>&1
  echo "process $i rc=$? $(grep 'wrong results' "$OUT/clock$i.txt")"
  awk -F, 'NR>1 {printf "%s %s/%s B%s P%s S%s prefix %.1f decode %.1f merge %.1f step %.1f\n", $1, $3, $4, $6, $7, $8, $13, $14, $15, $16}' "$OUT/clock$i.csv"
  grep -o "beside(k=.*" "$OUT/clock$i.txt"  # (run 7 printed only up to the first ")": the whole note is in clockN.txt)
done
kill $smi 2>/dev/null; wait $smi 2>/dev/null
echo "== nvidia-smi samples: $(wc -l <"$OUT/smi.csv"); power.draw W / clocks.sm MHz / throttle reasons (counts)"
awk -F', ' '{print $6}' "$OUT/smi.csv" | sort | uniq -c | sort -rn | head -6
awk -F', ' '{split($2,p," "); split($4,c," "); if (p[1]+0 > 400) {n++; sp+=p[1]; sc+=c[1]; if (c[1]+0 < mn || mn == 0) mn = c[1]+0}} END {if (n) printf "busy samples (> 400 W): %d, mean power %.0f W, mean clock %.0f MHz, min %d MHz\n", n, sp/n, sc/n, mn}' "$OUT/smi.csv"
head -2 "$OUT/smi.csv"
pack_logs
