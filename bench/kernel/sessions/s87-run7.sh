#!/usr/bin/env bash
# Session 87, run 7: session 60 run 2's table for the cost model's concurrent TMA step again, on
# this tree's prefix kernel (run 6, an H100: at 32/8 B256 P32768 S256 the planner's k = 14 now
# measures 12-13 us slower than k = 16, the prefix part having become ~7% faster). Per shape (32/8
# D128 fp16, the 20 shapes of CostModel.PlannerChoosesTheTmaModeWhereItMeasuredFaster) the step one
# after the other (PREFIXD_CONCURRENT_DECODE_SMS=0: the planner's sequential choice) and with the
# TMA decode forced on each of the backend's k = 14-64, interleaved, $ROUNDS rounds (2); the CSVs
# feed bench/kernel/tma_mode_fit.py. Carry: .carry/s86.
#   CARRY=.carry/s86 bash bench/kernel/sessions/s87-run7.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s87-run7
[ -f /tmp/b/prefixd_kernel_bench_spec ] && cp /tmp/b/prefixd_kernel_bench_spec "$B"  # .carry/s86 named its builds
V=PREFIXD_CONCURRENT_DECODE_SMS=0
for k in 14 16 20 28 36 48 56 64; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
for r in $(seq 1 "${ROUNDS:-2}"); do
  run_variants grid-r$r "$V" --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
  run_variants edge-r$r "$V" --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
done
# The refit on the device (its parts: bench/kernel/results/s87/fit-parts.txt, the unit test's
# "fit," lines), then the planner check of the mode's shapes with the built-in model and with the
# refit one (--cost-model: only the two fitted keys differ), so that the change is measured here.
python3 bench/kernel/tma_mode_fit.py bench/kernel/results/s87/fit-parts.txt "$OUT"/grid-r*.csv "$OUT"/edge-r*.csv \
  >"$OUT/fit.txt" 2>&1
head -4 "$OUT/fit.txt"; tail -2 "$OUT/fit.txt"
read -r scale interference _ < <(sed -n 2p "$OUT/fit.txt")
printf 'concurrent_tma_prefix_scale = %s\nconcurrent_tma_interference_us = %s\n' "$scale" "$interference" >"$OUT/refit.model"
for m in builtin refit; do
  model=(); [ $m = refit ] && model=(--cost-model "$OUT/refit.model")
  timeout 90 $B --planner-check "${model[@]}" --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16 \
    --planner-order plain-last >"$OUT/check-$m.txt" 2>&1
  echo "== planner check, $m model: rc=$?"; grep -E '^ +fp16 ' "$OUT/check-$m.txt" | cut -c1-120
done
SHOW_LINES=26 show_variants $(ls "$OUT" | sed -n 's/\.txt$//p') | grep -E '^  fp16|total us' | head -60
pack_logs
