#!/usr/bin/env bash
# Session 57, run 2 (nvidia-h200): run 1's GEMM phase again (run 1 passed -w 0, and the shape after
# the ceilings then deadlocked behind the hold kernel; the benchmark now refuses fewer than one
# warm-up). nvidia-smi samples power and SM clock every 20 ms while (G) cuBLAS fp16 8192^3 runs 700
# times back to back, then (P) the prefix-bound step 32/8 D128 B256 P32768 S32 fp16 runs 2000
# iterations without the L2 flush, then (C) the benchmark's own ceiling (10 repetitions after 3
# warm-ups, ~18 ms) in three separate processes, whose median rate against (G)'s says how much
# higher the clock of the short ceiling is than that of the sustained GEMM (the same kernel, so the
# same work per clock).
#   CARRY=.carry/s57b bash bench/kernel/sessions/s57-clock2.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s57-clock2
nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 20 >"$OUT/smi.csv" 2>&1 &
smi=$!
sleep 1
mark() { echo "$1 $(date '+%Y/%m/%d %H:%M:%S.%3N')" >>"$OUT/marks.txt"; }
tiny=(--heads 32/8 -b 16 -p 1024 -s 32 -n 1 -w 1 --no-baseline --no-graph -c 1)
mark G0
timeout 60 $B --gemm-n 8192 --gemm-reps 700 --settle-ms 0 "${tiny[@]}" >"$OUT/gemm700.txt" 2>&1
echo "gemm x700 rc=$? $(grep -A1 'ceilings measured now' "$OUT/gemm700.txt" | tail -1)"
mark G1
sleep 2
mark P0
timeout 120 $B --gemm-n 1024 --settle-ms 0 -d 128 --heads 32/8 -b 256 -p 32768 -s 32 --dtype fp16 --flush none \
  -n 2000 -w 5 --no-baseline --no-graph -c 1 --csv "$OUT/prefix.csv" >"$OUT/prefix.txt" 2>&1
echo "prefix rc=$? $(grep 'wrong results' "$OUT/prefix.txt")"
awk -F, 'NR>1 {printf "prefix part %.1f us (%.1f TFLOP/s), step %.1f us\n", $13, 4*$6*$3*$7*$5/($13*1e-6)/1e12, $16}' "$OUT/prefix.csv"
mark P1
for i in 1 2 3; do
  sleep 2
  timeout 60 $B --gemm-n 8192 --settle-ms 0 "${tiny[@]}" >"$OUT/gemm10-$i.txt" 2>&1
  echo "gemm x10 ($i) rc=$? $(grep -A1 'ceilings measured now' "$OUT/gemm10-$i.txt" | tail -1)"
done
sleep 1
kill $smi 2>/dev/null; wait $smi 2>/dev/null
python3 bench/kernel/smi_phases.py "$OUT/smi.csv" "$OUT/marks.txt" "GEMM 8192^3 x700:G0:G1" \
  "prefix 32/8 B256 P32768 S32 x2000:P0:P1"
pack_logs
