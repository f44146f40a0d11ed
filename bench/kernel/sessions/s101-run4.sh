#!/usr/bin/env bash
# Session 101, run 4 (not run in session 101: its device time was spent on failed starts), on
# .carry/s101a, any card. Why fp16's prefix part is 2.5-4% slower than bf16's at 32/8 B256 P32768
# (s94, H200: S32 194.3 against 186.6 µs; the headline's 211.8 against 206.7 on 116 CTAs) although
# the two sm_90a kernels' SASS differ only in the F2FP opcode (session 101, sass_config.sh at
# head_dim 128, 160-token tiles: the same 168 registers, turns and opcode counts): is fp16's the
# lower SM clock under the power cap? nvidia-smi samples power, SM clock and throttle reasons every
# 20 ms while the prefix-bound step 32/8 D128 B256 P32768 S32 runs 2000 iterations without the L2
# flush, fp16 (F), then bf16 (H), then fp16 again (F2); per phase the medians (smi_phases.py) and the
# prefix part's TFLOP/s. Same clock and the rate gap stays: the tensor pipe's rate per dtype.
#   CARRY=.carry/s101a bash bench/kernel/sessions/s101-run4.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s101-run4
smi_start
phase() {  # phase NAME DTYPE
  sleep 2
  mark "${1}0"
  timeout 120 $B --gemm-n 1024 --settle-ms 0 -d 128 --heads 32/8 -b 256 -p 32768 -s 32 --dtype "$2" --flush none \
    -n 2000 -w 5 --no-baseline --no-graph -c 1 --csv "$OUT/prefix-$1.csv" >"$OUT/prefix-$1.txt" 2>&1
  echo "$1 ($2) rc=$? $(grep 'wrong results' "$OUT/prefix-$1.txt")"
  awk -F, 'NR>1 {printf "  prefix part %.1f us (%.1f TFLOP/s), step %.1f us\n", $13,
    4*$6*$3*$7*$5/($13*1e-6)/1e12, $16}' "$OUT/prefix-$1.csv"
  mark "${1}1"
}
phase F fp16
phase H bf16
phase F2 fp16
smi_stop
python3 bench/kernel/smi_phases.py "$OUT/smi.csv" "$OUT/marks.txt" "fp16:F0:F1" "bf16:H0:H1" "fp16 again:F20:F21"
pack_logs
