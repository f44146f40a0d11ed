#!/usr/bin/env bash
# Session 57, run 5 (nvidia-h200): where the prefix kernel's cycles go against cuBLAS's, per clock
# (runs 1-2: the prefix kernel does 75% of cuBLAS's work per clock). Nsight Compute (clocks not
# locked) on one launch each: the compute-bound prefix kernel of 32/8 D128 B256 P32768 S32 fp16 on
# every SM (64 row-tile pairs x 256 tiles of 128 tokens = 16384 CTA tiles: instructions per tile),
# and the benchmark's ceiling GEMM (cuBLAS fp16 8192^3). Their SpeedOfLight / tensor-pipe lines side
# by side, then the prefix kernel's stalls by reason and its hottest SASS lines.
#   CARRY=.carry/s57d bash bench/kernel/sessions/s57-ncu.sh
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/kernel/device-setup.sh s57-ncu
# PART=gemm (run 6): only the GEMM (run 5's regex, gemm|xmma|cutlass, matched no kernel: cuBLAS
# 13 names its Hopper GEMMs otherwise, e.g. nvjet_*; if none matches again, the names of every
# kernel the run launched are listed).
if [ "${PART:-all}" = all ]; then
run_ncu_stalls prefix PrefixAttentionWgmmaKernel 16384 $B -d 128 --heads 32/8 -b 256 -p 32768 -s 32 --dtype fp16 \
  --no-baseline --no-graph -c 1 -n 3 -w 1 --gemm-n 1024
fi
timeout 150 ncu --kernel-name "regex:nvjet|gemm|xmma|cutlass" --launch-skip 4 --launch-count 1 --clock-control none \
  --section SpeedOfLight --section ComputeWorkloadAnalysis -f -o "$OUT/gemm" \
  $B --gemm-n 8192 --heads 32/8 -b 16 -p 1024 -s 32 -n 1 -w 1 --no-baseline --no-graph -c 1 >"$OUT/gemm-ncu.txt" 2>&1
echo "ncu gemm rc=$?"
if [ ! -f "$OUT/gemm.ncu-rep" ]; then
  timeout 150 ncu --section LaunchStats --clock-control none $B --gemm-n 8192 --heads 32/8 -b 16 -p 1024 -s 32 -n 1 -w 1 \
    --no-baseline --no-graph -c 1 2>&1 | grep -oE '^  [A-Za-z_][A-Za-z0-9_]*' | sort | uniq -c
fi
ncu -i "$OUT/gemm.ncu-rep" --page details --print-details all >"$OUT/gemm-details.txt" 2>&1
for f in prefix gemm; do
  echo "== $f"
  grep -E "^  [A-Za-z].*(Kernel|gemm|Prefix)|Duration|SM Frequency|Compute \(SM\) Throughput|Issued Warp|Issue Slots Busy|Tensor|Pipe" "$OUT/$f-details.txt" | head -16
done
pack_logs
