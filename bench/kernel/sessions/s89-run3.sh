#!/usr/bin/env bash
# Session 89, run 3. On an H200 first the grid (run_bar_grid). Then, on any card: runs 1-2 found
# the concurrent TMA step 13-19 µs faster on k = 8-12 SMs than on the planner's k = 14 at the
# prefix-bound 32/8 B256 P32768 S64-S128 (an H100; the prefix grid of 132 − k CTAs then fills the
# stream balance's slots of 8), k the backend does not offer (ConcurrentTmaDecodeCandidates: 14,
# 16, 20, ... 64). (1) Session 87 run 7's forced-k table again with k = 8, 10 and 12 added and the
# S64 shapes: the step one after the other (PREFIXD_CONCURRENT_DECODE_SMS=0) and with the TMA decode
# forced on each k, interleaved, one round (fp16, 32/8 D128), for the cost-model test of the new
# candidates. (2) The planner check (the model's choice and the measured choice, timed against
# the cascade and plain decode) with the built-in candidates and with 8, 10 and 12 added
# (PREFIXD_CONCURRENT_TMA_CANDIDATES), 32/8 B128-256 P16384-32768 S64-256 fp16 and B256 P32768 bf16.
# Carry .carry/s89 (ignored, local): this tree's prefixd_kernel_bench, prefixd_gpu_tests, prefixd:
#   mkdir -p .carry/s89 && tar -C build -cf - --transform 's,.*/,./,' bench/prefixd_kernel_bench \
#     tests/prefixd_gpu_tests launch/prefixd | xz -6 -T2 > .carry/s89/bins.tar.xz
#   CARRY=.carry/s89 bash bench/kernel/sessions/s89-run3.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/kernel/device-setup.sh s89-run3
run_bar_grid
V=PREFIXD_CONCURRENT_DECODE_SMS=0
for k in 8 10 12 14 16 20 28 36 48 56 64; do V=$V,PREFIXD_CONCURRENT_DECODE_SMS=$k+PREFIXD_CONCURRENT_DECODE_TMA=force; done
run_variants table-grid "$V" --heads 32/8 -b 128,256 -p 8192,16384,32768 -s 128,256 --dtype fp16
run_variants table-edge "$V" --heads 32/8 -b 64,256 -p 8192,32768 -s 32,512 --dtype fp16
run_variants table-s64 "$V" --heads 32/8 -b 128,256 -p 16384,32768 -s 64 --dtype fp16
SHOW_LINES=30 show_variants table-grid table-edge table-s64 | grep -E '^  fp16|total us' | head -30
NEW=8,10,12,14,16,20,28,36,48,56,64
for cand in builtin new; do
  for dt in fp16 bf16; do
    args=(--heads 32/8 -b 128,256 -p 16384,32768 -s 64,128,256); [ $dt = bf16 ] && args=(--heads 32/8 -b 256 -p 32768 -s 64,128,256)
    if [ $cand = new ]; then export PREFIXD_CONCURRENT_TMA_CANDIDATES=$NEW; else unset PREFIXD_CONCURRENT_TMA_CANDIDATES; fi
    timeout 150 $B --planner-check "${args[@]}" --dtype $dt --planner-order plain-last >"$OUT/check-$cand-$dt.txt" 2>&1
    echo "== planner check, $cand candidates, $dt: rc=$?"
    grep -E "^ +$dt " "$OUT/check-$cand-$dt.txt" | cut -c1-200
  done
done
unset PREFIXD_CONCURRENT_TMA_CANDIDATES
pack_logs
