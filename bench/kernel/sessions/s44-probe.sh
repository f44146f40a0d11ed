#!/usr/bin/env bash
# Session 44, run 2 (nvidia-h200): why run 1's balanced grid was slower at head_dim 128 and 256
# (+12 µs, +57 µs on the prefix part) and faster at 64 (−3 µs). The prefix probe (wgmma only,
# 32/8 B256 P32768 at D 64 / 128 / 256, fp16) without and with --balance 132, with --timeline: the
# one-item CTAs' latest exit against the exits of the 4 idle SMs' chains of tails; then both again
# with 400 launches each while nvidia-smi samples the SM clock and power every 20 ms (does a 132-CTA
# grid run at a lower clock than a 128-CTA one?).
#   CARRY=.carry/s44b bash bench/kernel/sessions/s44-probe.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s44-probe
P=/tmp/b/prefixd_prefix_probe
S="--shape 32/8:256:32768:128 --shape 32/8:256:32768:256 --shape 32/8:256:32768:64"
for bal in 0 132; do
  timeout 100 $P --kernel wgmma --timeline --balance $bal $S >"$OUT/probe-b$bal.txt" 2>&1
  echo "== balance $bal rc=$?"; grep -E '^wgmma|^# balance|^# timeline|exit|tiles done|^# exits' "$OUT/probe-b$bal.txt" | cut -c1-160
done
for bal in 0 132; do
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 20 >"$OUT/smi-b$bal.txt" 2>&1 &
  smi=$!
  timeout 100 $P --kernel wgmma --iters 400 --balance $bal --shape 32/8:256:32768:256 >"$OUT/long-b$bal.txt" 2>&1
  kill $smi
  echo "== long balance $bal: $(grep -E '^wgmma' "$OUT/long-b$bal.txt" | cut -c1-120)"
  sort -n "$OUT/smi-b$bal.txt" | awk -F, '$2>300 {c[NR]=$1; p+=$2; n++} END {printf "samples over 300 W: %d, mean power %.0f W\n", n, p/n}'
  awk -F, '$2>300 {print $1}' "$OUT/smi-b$bal.txt" | sort -n | uniq -c | sort -k2 -n | tail -6 | tr '\n' ' '; echo
done
pack_logs
